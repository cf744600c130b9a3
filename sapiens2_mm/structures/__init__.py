from .dense_data_sample import DenseDataSample
from .dense_outputs import (
    DenseField,
    DenseOutputs,
    declare_dense_task,
    dense_field,
    dense_fields,
    dense_outputs,
    dense_target_fields,
    forget_dense_task,
)

__all__ = [
    'DenseDataSample', 'DenseField', 'DenseOutputs', 'declare_dense_task',
    'dense_field', 'dense_fields', 'dense_outputs', 'dense_target_fields',
    'forget_dense_task'
]
