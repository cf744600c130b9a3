"""All registry nodes of sapiens2_mm.

Every node has scope ``'sapiens2_mm'`` (equal to the import name, so mmengine can
import the package from a config's ``default_scope``) and an mmengine root registry
as parent. Configs with ``default_scope='sapiens2_mm'`` therefore find our own types
unprefixed and upstream types with their scope prefix (``mmpose.HeatmapHead``).
"""
from mmengine.registry import DATA_SAMPLERS as MMENGINE_DATA_SAMPLERS
from mmengine.registry import DATASETS as MMENGINE_DATASETS
from mmengine.registry import EVALUATOR as MMENGINE_EVALUATOR
from mmengine.registry import FUNCTIONS as MMENGINE_FUNCTIONS
from mmengine.registry import HOOKS as MMENGINE_HOOKS
from mmengine.registry import INFERENCERS as MMENGINE_INFERENCERS
from mmengine.registry import LOG_PROCESSORS as MMENGINE_LOG_PROCESSORS
from mmengine.registry import LOOPS as MMENGINE_LOOPS
from mmengine.registry import METRICS as MMENGINE_METRICS
from mmengine.registry import MODEL_WRAPPERS as MMENGINE_MODEL_WRAPPERS
from mmengine.registry import MODELS as MMENGINE_MODELS
from mmengine.registry import (
    OPTIM_WRAPPER_CONSTRUCTORS as MMENGINE_OPTIM_WRAPPER_CONSTRUCTORS,
)
from mmengine.registry import OPTIM_WRAPPERS as MMENGINE_OPTIM_WRAPPERS
from mmengine.registry import OPTIMIZERS as MMENGINE_OPTIMIZERS
from mmengine.registry import PARAM_SCHEDULERS as MMENGINE_PARAM_SCHEDULERS
from mmengine.registry import RUNNER_CONSTRUCTORS as MMENGINE_RUNNER_CONSTRUCTORS
from mmengine.registry import RUNNERS as MMENGINE_RUNNERS
from mmengine.registry import STRATEGIES as MMENGINE_STRATEGIES
from mmengine.registry import TASK_UTILS as MMENGINE_TASK_UTILS
from mmengine.registry import TRANSFORMS as MMENGINE_TRANSFORMS
from mmengine.registry import VISBACKENDS as MMENGINE_VISBACKENDS
from mmengine.registry import VISUALIZERS as MMENGINE_VISUALIZERS
from mmengine.registry import WEIGHT_INITIALIZERS as MMENGINE_WEIGHT_INITIALIZERS
from mmengine.registry import Registry

SCOPE = 'sapiens2_mm'

# ``sapiens2_mm.models`` itself stays light (backbone only, no mmpose/mmseg);
# heads and losses are imported when a model is first built from a config.
MODEL_LOCATIONS = [
    'sapiens2_mm.models', 'sapiens2_mm.models.heads',
    'sapiens2_mm.models.losses', 'sapiens2_mm.models.estimators',
    'sapiens2_mm.models.necks', 'sapiens2_mm.models.selfsup'
]

MODELS = Registry(
    'model', parent=MMENGINE_MODELS, scope=SCOPE,
    locations=MODEL_LOCATIONS)
DATASETS = Registry(
    'dataset', parent=MMENGINE_DATASETS, scope=SCOPE,
    locations=['sapiens2_mm.datasets'])
DATA_SAMPLERS = Registry(
    'data sampler', parent=MMENGINE_DATA_SAMPLERS, scope=SCOPE,
    locations=['sapiens2_mm.datasets'])
TRANSFORMS = Registry(
    'transform', parent=MMENGINE_TRANSFORMS, scope=SCOPE,
    locations=['sapiens2_mm.datasets'])
METRICS = Registry(
    'metric', parent=MMENGINE_METRICS, scope=SCOPE,
    locations=['sapiens2_mm.evaluation'])
EVALUATOR = Registry(
    'evaluator', parent=MMENGINE_EVALUATOR, scope=SCOPE,
    locations=['sapiens2_mm.evaluation'])
TASK_UTILS = Registry(
    'task util', parent=MMENGINE_TASK_UTILS, scope=SCOPE,
    locations=['sapiens2_mm.codecs'])
HOOKS = Registry(
    'hook', parent=MMENGINE_HOOKS, scope=SCOPE,
    locations=['sapiens2_mm.engine'])
LOOPS = Registry(
    'loop', parent=MMENGINE_LOOPS, scope=SCOPE,
    locations=['sapiens2_mm.engine'])
OPTIMIZERS = Registry(
    'optimizer', parent=MMENGINE_OPTIMIZERS, scope=SCOPE,
    locations=['sapiens2_mm.engine'])
OPTIM_WRAPPERS = Registry(
    'optim wrapper', parent=MMENGINE_OPTIM_WRAPPERS, scope=SCOPE,
    locations=['sapiens2_mm.engine'])
OPTIM_WRAPPER_CONSTRUCTORS = Registry(
    'optimizer wrapper constructor',
    parent=MMENGINE_OPTIM_WRAPPER_CONSTRUCTORS, scope=SCOPE,
    locations=['sapiens2_mm.engine'])
PARAM_SCHEDULERS = Registry(
    'parameter scheduler', parent=MMENGINE_PARAM_SCHEDULERS, scope=SCOPE,
    locations=['sapiens2_mm.engine'])
VISUALIZERS = Registry(
    'visualizer', parent=MMENGINE_VISUALIZERS, scope=SCOPE,
    locations=['sapiens2_mm.visualization'])
VISBACKENDS = Registry(
    'vis_backend', parent=MMENGINE_VISBACKENDS, scope=SCOPE,
    locations=['sapiens2_mm.visualization'])

# One description per task (config recognition, dataset meta, checkpoint keys,
# inferencer, writers, visualizer, show hook) for init_model, tools/infer.py and
# tools/test.py. mmengine has no root for these, so this node has no parent and
# is not part of ALL_REGISTRIES.
TASKS = Registry('task', scope=SCOPE, locations=['sapiens2_mm.apis.tasks'])

# Nodes we register nothing in. mmengine builds log processors, weight
# initializers, wrappers, strategies, runners and inferencers under the
# default scope and warns "Failed to search registry with scope sapiens2_mm"
# for every root that has no child of that scope; these children resolve
# every name through their mmengine parent.
LOG_PROCESSORS = Registry(
    'log_processor', parent=MMENGINE_LOG_PROCESSORS, scope=SCOPE)
WEIGHT_INITIALIZERS = Registry(
    'weight initializer', parent=MMENGINE_WEIGHT_INITIALIZERS, scope=SCOPE)
MODEL_WRAPPERS = Registry(
    'model_wrapper', parent=MMENGINE_MODEL_WRAPPERS, scope=SCOPE)
STRATEGIES = Registry('strategy', parent=MMENGINE_STRATEGIES, scope=SCOPE)
RUNNERS = Registry('runner', parent=MMENGINE_RUNNERS, scope=SCOPE)
RUNNER_CONSTRUCTORS = Registry(
    'runner constructor', parent=MMENGINE_RUNNER_CONSTRUCTORS, scope=SCOPE)
INFERENCERS = Registry('inferencer', parent=MMENGINE_INFERENCERS, scope=SCOPE)
FUNCTIONS = Registry('function', parent=MMENGINE_FUNCTIONS, scope=SCOPE)

ALL_REGISTRIES = (
    MODELS, DATASETS, DATA_SAMPLERS, TRANSFORMS, METRICS, EVALUATOR,
    TASK_UTILS, HOOKS, LOOPS, OPTIMIZERS, OPTIM_WRAPPERS,
    OPTIM_WRAPPER_CONSTRUCTORS, PARAM_SCHEDULERS, VISUALIZERS, VISBACKENDS,
    LOG_PROCESSORS, WEIGHT_INITIALIZERS, MODEL_WRAPPERS, STRATEGIES, RUNNERS,
    RUNNER_CONSTRUCTORS, INFERENCERS, FUNCTIONS)
