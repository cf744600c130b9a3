"""High-level inference APIs: build a task model, run it on images/videos.

>>> from sapiens2_mm.apis import init_model, build_inferencer
>>> model = init_model('configs/seg/...py', 'sapiens2_1b_seg.safetensors')
>>> results = build_inferencer(model)(['a.jpg', 'frames/'])
"""
from .base_inferencer import (
    BaseInferencer,
    build_inferencer,
    inference_pipeline,
)
from .dense_inferencer import DenseInferencer
from .inference_run import InferenceIndex, RunSummary, run_inference
from .init_model import init_model, load_config, load_task_checkpoint
from .inputs import Frame, FrameReader
from .ply import write_ply
from .pose_inferencer import (
    BoxFile,
    DetectorBoxes,
    PoseInferencer,
    WholeImageBoxes,
)
from .results import DenseResult, PoseResult, SegResult
from .runner import Runner, render_frames
from .seg_inferencer import SegInferencer
from .tasks import BaseTask, find_task, get_task, task_names
from .writers import FrameSink, OutputLayout, TaskWriter

__all__ = [
    'BaseInferencer', 'inference_pipeline', 'init_model', 'load_config',
    'load_task_checkpoint', 'Frame', 'FrameReader', 'BoxFile',
    'DetectorBoxes', 'WholeImageBoxes', 'PoseInferencer', 'PoseResult',
    'SegResult', 'SegInferencer', 'InferenceIndex', 'RunSummary',
    'run_inference', 'BaseTask', 'find_task', 'get_task',
    'task_names', 'FrameSink', 'OutputLayout', 'TaskWriter',
    'build_inferencer', 'DenseInferencer', 'DenseResult', 'write_ply',
    'Runner', 'render_frames'
]
