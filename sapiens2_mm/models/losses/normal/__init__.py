"""Surface-normal losses: cosine x10 + ``MaskedL1Loss`` x1 + gradient x10."""
from .cosine_similarity import NormalCosineSimilarityLoss
from .gradient_mse import NormalGradL1Loss

__all__ = ['NormalCosineSimilarityLoss', 'NormalGradL1Loss']
