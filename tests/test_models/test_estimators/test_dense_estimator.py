"""DenseEstimator modes, letterbox removal, flip test."""
import pytest
import torch
from mmengine.structures import PixelData

from sapiens2_mm.registry import MODELS
from sapiens2_mm.structures import DenseDataSample

SMALL_ARCH = dict(embed_dims=32, num_layers=2, num_heads=4,
                  feedforward_channels=128, num_tokenizer_layers=2)
HEADS = {
    'normal': dict(type='NormalHead'),
    'albedo': dict(type='AlbedoHead'),
    'pointmap': dict(type='PointmapHead', scale_conv_out_channels=(8,),
                     scale_conv_kernel_sizes=(1,), scale_final_layer=(8, 1),
                     scale_pool_size=(1, 1), scale_guard='clamp'),
}


def _model(task, flip_test=False):
    head = dict(HEADS[task], in_channels=32, upsample_channels=(16, 8),
                conv_out_channels=(8,), conv_kernel_sizes=(3,))
    model = MODELS.build(dict(
        type='DenseEstimator',
        data_preprocessor=dict(type='mmengine.ImgDataPreprocessor',
                               mean=[123.675, 116.28, 103.53],
                               std=[58.395, 57.12, 57.375], bgr_to_rgb=True),
        backbone=dict(type='Sapiens2', arch=SMALL_ARCH, img_size=(64, 48),
                      out_type='featmap', init_cfg=None),
        decode_head=head,
        test_cfg=dict(mode='whole', flip_test=flip_test)))
    torch.manual_seed(0)
    model.init_weights()
    if task == 'pointmap':  # a positive scale whatever the random weights
        with torch.no_grad():
            model.decode_head.scale_final_layer[-1].bias.fill_(2.0)
    return model


def _training_sample(task, seed):
    g = torch.Generator().manual_seed(seed)
    sample = DenseDataSample(metainfo=dict(img_path=f'img{seed}.png'))
    mask = torch.zeros(1, 16, 12, dtype=torch.bool)
    mask[:, 2:14, 3:10] = True
    sample.gt_mask = PixelData(data=mask)
    if task == 'normal':
        normal = torch.nn.functional.normalize(torch.randn(3, 16, 12,
                                                           generator=g), dim=0)
        sample.gt_normal = PixelData(data=normal)
    elif task == 'albedo':
        sample.gt_albedo = PixelData(data=torch.rand(3, 16, 12, generator=g))
    else:
        z = torch.rand(1, 16, 12, generator=g) + 1.0
        sample.gt_pointmap = PixelData(data=torch.cat([z * 0.1, z * 0.2, z]))
        sample.set_metainfo(dict(
            gt_mean_depth=1.5, canonical_scale=0.8,
            cam_K=[[20.0, 0, 6.0], [0, 20.0, 8.0], [0, 0, 1]]))
    return sample


@pytest.mark.parametrize('task', sorted(HEADS))
def test_loss_mode_trains_backbone_and_head(task):
    model = _model(task)
    data = dict(
        inputs=[torch.randint(0, 255, (3, 64, 48), dtype=torch.uint8)
                for _ in range(2)],
        data_samples=[_training_sample(task, i) for i in range(2)])
    # The head outputs 16x12 (two x2 stages on 4x3); targets are 16x12 too.
    data = model.data_preprocessor(data, True)
    losses = model(**data, mode='loss')
    names = {n.removeprefix('decode.') for n in losses}
    expected = {m.loss_name for m in model.decode_head.loss_decode}
    assert names == expected and all(n.startswith('decode.') for n in losses)
    total = sum(losses.values())
    assert torch.isfinite(total)
    total.backward()
    grad = model.backbone.patch_embed.projection.weight.grad
    assert grad is not None and grad.abs().sum() > 0


def test_tensor_mode_returns_official_outputs():
    model = _model('pointmap').eval()
    out = model(torch.randn(2, 3, 64, 48), None, mode='tensor')
    assert isinstance(out, tuple) and len(out) == 2
    assert out[0].shape == (2, 3, 16, 12) and out[1].shape == (2, 1)
    normal = _model('normal').eval()(torch.randn(1, 3, 64, 48), mode='tensor')
    assert normal.shape == (1, 3, 16, 12)


def test_predict_removes_the_letterbox_and_keeps_metainfo():
    # The head predicts at a quarter of the input (16x12 of 64x48): the
    # padding (0, 0, 4, 4) of the input is (0, 0, 1, 1) prediction pixels.
    model = _model('pointmap').eval()
    data = dict(inputs=[torch.randint(0, 255, (3, 64, 48), dtype=torch.uint8)],
                data_samples=[DenseDataSample(metainfo=dict(
                    img_path='a.png', ori_shape=(30, 40), img_shape=(64, 48),
                    padding_size=(0, 0, 4, 4), scale_factor=(0.3, 0.3)))])
    data = model.data_preprocessor(data, False)
    assert data['data_samples'][0].padding_size == (0, 0, 4, 4)
    with torch.no_grad():
        result, = model(**data, mode='predict')
        raw, raw_scale = model(data['inputs'], mode='tensor')
    assert result.pred_pointmap.data.shape == (3, 30, 40)
    assert result.pred_depth.data.shape == (1, 30, 40)
    scale = result.pred_scale
    assert raw_scale.item() > 0 and scale == pytest.approx(raw_scale.item())
    # independently: divide by s, crop one row top and bottom, blur 4 x
    # (3x3, sigma 0.8: the official demo's smoothing before an enlargement)
    # and resize
    from torchvision.transforms.functional import gaussian_blur
    expected = raw[:, :, 1:15, :] / scale
    for _ in range(4):
        expected = gaussian_blur(expected, [3, 3], [0.8, 0.8])
    expected = torch.nn.functional.interpolate(
        expected, size=(30, 40), mode='bilinear', align_corners=False)[0]
    torch.testing.assert_close(result.pred_pointmap.data, expected)
    # 768 px of the canonical camera in the prediction frame, which is 0.3 x
    # (12 / 48) of the original image
    assert result.pred_focal_length == pytest.approx(
        768 / (scale * 0.3 * 0.25))
    assert result.img_path == 'a.png'


def test_padding_that_is_not_whole_prediction_pixels_is_refused():
    model = _model('normal').eval()
    sample = DenseDataSample(metainfo=dict(
        img_path='a.png', ori_shape=(30, 40), img_shape=(64, 48),
        padding_size=(0, 0, 2, 2)))
    with torch.no_grad(), pytest.raises(ValueError,
                                        match=r'\(0, 0, 2, 2\).*align=4'):
        model.predict(torch.randn(1, 3, 64, 48), [sample])


@pytest.mark.parametrize('task', ['normal', 'pointmap'])
def test_flip_test_is_mirror_equivariant(task):
    model = _model(task, flip_test=True).eval()
    x = torch.randn(1, 3, 64, 48)
    with torch.no_grad():
        plain, = model.predict(x)
        mirrored, = model.predict(x.flip(-1))
    field = 'pred_normal' if task == 'normal' else 'pred_pointmap'
    a, b = getattr(plain, field).data, getattr(mirrored, field).data
    expected = b.flip(-1) * torch.tensor([-1.0, 1.0, 1.0]).view(3, 1, 1)
    torch.testing.assert_close(a, expected, atol=1e-5, rtol=1e-5)
    # and the flip test changes the result (the model is not symmetric).
    model.test_cfg['flip_test'] = False
    with torch.no_grad():
        single, = model.predict(x)
    assert not torch.allclose(getattr(single, field).data, a, atol=1e-4)


def test_only_whole_image_inference_is_accepted():
    with pytest.raises(ValueError, match="'slide'"):
        MODELS.build(dict(
            type='DenseEstimator',
            backbone=dict(type='Sapiens2', arch=SMALL_ARCH, img_size=(64, 48),
                          out_type='featmap', init_cfg=None),
            decode_head=dict(type='NormalHead', in_channels=32),
            test_cfg=dict(mode='slide')))
