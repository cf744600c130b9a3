"""Top-down 2-D pose inference on whole images (the official pose demo)."""
from typing import Callable, List, Optional

import numpy as np

from .base_inferencer import BaseInferencer
from .inputs import Frame
from .person_boxes import WholeImageBoxes
from .results import PoseResult


class PoseInferencer(BaseInferencer):
    """Keypoints of every person box, mapped back to image pixels.

    Each box goes through the config's test pipeline (bbox centre/scale with
    1.25 padding, UDP affine crop), crops are batched through mmpose's
    ``TopdownPoseEstimator.test_step`` (heatmaps, optional flip test, the
    codec's decode and the crop -> image mapping ``kp / input_size *
    bbox_scale + bbox_center - bbox_scale / 2``), and the people of each frame
    are gathered into one :class:`PoseResult`.

    Args:
        model / checkpoint / device / batch_size / flip_test / speed: see
            :class:`BaseInferencer`; ``batch_size`` counts person crops.
        boxes: person box source, ``frame -> (N, 5)`` array (see
            :mod:`sapiens2_mm.apis.person_boxes`); default: the whole image.
    """
    task = 'pose'

    def __init__(self, model, checkpoint: Optional[str] = None,
                 device: str = 'cpu', batch_size: int = 4,
                 flip_test: Optional[bool] = None,
                 boxes: Optional[Callable[[Frame], np.ndarray]] = None,
                 **speed) -> None:
        super().__init__(model, checkpoint, device, batch_size, flip_test,
                         **speed)
        self.boxes = boxes if boxes is not None else WholeImageBoxes()
        if flip_test is not None:
            self.model.test_cfg = dict(self.model.test_cfg or {},
                                       flip_test=bool(flip_test))
        self.num_keypoints = int(self.model.dataset_meta['num_keypoints'])

    def _crop(self, frame: Frame, box: np.ndarray) -> dict:
        h, w = frame.image.shape[:2]
        info = dict(img=frame.image, img_path=frame.name, img_shape=(h, w),
                    ori_shape=(h, w), bbox=box[None, :4].astype(np.float32),
                    bbox_score=box[4:5].astype(np.float32))
        info.update(self.model.dataset_meta)
        return self.pipeline(info)

    def run_batch(self, frames: List[Frame]) -> List[PoseResult]:
        boxes = [np.asarray(self.boxes(f), dtype=np.float32).reshape(-1, 5)
                 for f in frames]
        crops = [self._crop(f, b) for f, bs in zip(frames, boxes) for b in bs]
        samples = []
        for start in range(0, len(crops), self.batch_size):
            samples += self._test_step(crops[start:start + self.batch_size])
        k = self.num_keypoints
        results, pos = [], 0
        for frame, frame_boxes in zip(frames, boxes):
            n = len(frame_boxes)
            mine = samples[pos:pos + n]
            pos += n
            kpts = [s.pred_instances.keypoints.reshape(k, 2) for s in mine]
            scores = [s.pred_instances.keypoint_scores.reshape(k) for s in mine]
            results.append(PoseResult(
                name=frame.name, image_size=tuple(frame.image.shape[:2]),
                bboxes=frame_boxes[:, :4].copy(),
                bbox_scores=frame_boxes[:, 4].copy(),
                keypoints=np.asarray(kpts, np.float32).reshape(n, k, 2),
                keypoint_scores=np.asarray(scores, np.float32).reshape(n, k),
                video=frame.video, frame_index=frame.frame_index))
        return results
