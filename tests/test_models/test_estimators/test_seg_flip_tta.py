"""SegFlipTTAModel: flip-test logits against a by-hand reconstruction."""
import os.path as osp

import torch
from mmengine.config import Config
from mmengine.dataset import Compose, pseudo_collate

from sapiens2_mm.metainfo.seg29 import seg29_metainfo
from sapiens2_mm.models.estimators import swap_channels
from sapiens2_mm.registry import MODELS


def test_flip_tta_averages_logits_with_swapped_channels(repo_path):
    cfg = Config.fromfile(repo_path(
        'configs', 'seg', 'sapiens2-tiny_1xb2-30_seg29sample-128x96.py'))
    torch.manual_seed(0)
    model = MODELS.build(cfg.model).eval()
    tta = MODELS.build(dict(cfg.tta_model, module=model))
    root = repo_path('tests', 'data', 'seg_sample')
    info = dict(img_path=osp.join(root, 'images', '000000000785.jpg'),
                seg_map_path=osp.join(root, 'labels', '000000000785.png'),
                reduce_zero_label=False, seg_fields=[])
    data = Compose(cfg.tta_pipeline)(info)
    batch = pseudo_collate([data])
    with torch.no_grad():
        merged = tta.test_step(batch)[0]
        plain = model.test_step(dict(inputs=batch['inputs'][0],
                                     data_samples=batch['data_samples'][0]))
        flipped = model.test_step(dict(inputs=batch['inputs'][1],
                                       data_samples=batch['data_samples'][1]))
    assert batch['data_samples'][1][0].flip
    assert batch['inputs'][0][0].shape == (3, 128, 96)
    a = plain[0].seg_logits.data
    b = swap_channels(flipped[0].seg_logits.data, seg29_metainfo()
                      ['flip_swap_pairs'])
    # The un-flipped view, by hand: network on the mirrored image, mirrored
    # back, left/right channels exchanged.
    x = batch['inputs'][0][0].flip(-1)[None]
    with torch.no_grad():
        hand = model.data_preprocessor(dict(inputs=[x[0]]), False)['inputs']
        raw = model._forward(hand).flip(-1)
    raw = torch.nn.functional.interpolate(raw, size=a.shape[-2:],
                                          mode='bilinear', align_corners=False)
    assert torch.allclose(swap_channels(raw[0], seg29_metainfo()
                                        ['flip_swap_pairs']), b, atol=1e-5)
    assert torch.allclose(merged.seg_logits.data, (a + b) / 2, atol=1e-6)
    assert torch.equal(merged.pred_sem_seg.data[0],
                       ((a + b) / 2).argmax(0))
    assert merged.gt_sem_seg.data.shape[-2:] == a.shape[-2:] == (170, 256)
