"""High-level inference APIs: build a task model, run it on images/videos.

>>> from sapiens2_mm.apis import init_model, build_inferencer
>>> model = init_model('configs/seg/...py', 'sapiens2_1b_seg.safetensors')
>>> results = build_inferencer(model)(['a.jpg', 'frames/'])
"""
from ..utils.config_file import load_config
from .base_inferencer import BaseInferencer, inference_pipeline
from .box_sources import BoxFile, DetectorBoxes, WholeImageBoxes
from .build_inferencer import build_inferencer
from .dense_inferencer import DenseInferencer
from .frame_pipeline import FramePipeline, render_frames
from .inference_index import InferenceIndex
from .inference_run import RunSummary, run_inference
from .init_model import init_model, load_task_checkpoint
from .inputs import Frame, FrameReader
from .mask_sources import SegDirMasks, SegModelMasks
from .ply import write_ply
from .pose_inferencer import PoseInferencer
from .results import DenseResult, PoseResult, SegResult
from .seg_inferencer import SegInferencer
from .tasks import BaseTask, TaskOptions, find_task, get_task, task_names
from .writers import FrameSink, OutputLayout, TaskWriter

__all__ = [
    'BaseInferencer', 'inference_pipeline', 'init_model', 'load_config',
    'load_task_checkpoint', 'Frame', 'FrameReader', 'BoxFile',
    'DetectorBoxes', 'WholeImageBoxes', 'PoseInferencer', 'PoseResult',
    'SegResult', 'SegInferencer', 'InferenceIndex', 'RunSummary',
    'run_inference', 'BaseTask', 'TaskOptions', 'find_task', 'get_task',
    'task_names', 'FrameSink', 'OutputLayout', 'TaskWriter',
    'build_inferencer', 'DenseInferencer', 'DenseResult', 'write_ply',
    'FramePipeline', 'render_frames', 'SegDirMasks', 'SegModelMasks'
]
