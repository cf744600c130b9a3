from .dense_data_sample import DENSE_TARGET_FIELDS, DenseDataSample

__all__ = ['DenseDataSample', 'DENSE_TARGET_FIELDS']
