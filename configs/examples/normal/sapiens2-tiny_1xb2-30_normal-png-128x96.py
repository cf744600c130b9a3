# Recipe "your own normals" (docs/custom_data.md): the tiny Sapiens2 normal
# model on normal maps stored as 16-bit (or 8-bit) PNG, RGB = (x, y, z) with
# n = 2 c - 1, in the OpenGL camera frame (x right, y up, z toward the
# viewer), and no mask files: every pixel with a valid normal counts.
# LoadDenseAnnotations converts them to the targets' frame (OpenCV, pointing
# toward the camera). Layout: {data_root}/images/<name>.png|.jpg and
# {data_root}/normals/<name>.png.
#   python tools/train.py configs/examples/normal/sapiens2-tiny_1xb2-30_normal-png-128x96.py
_base_ = ['../../normal/sapiens2-tiny_1xb2-30_densesample-128x96.py']
data_root = 'data/my_normals/'
load = [dict(type='Sapiens2LoadImage'),
        dict(type='LoadDenseAnnotations', normal_convention='opengl')]
dataset = dict(type='NormalDataset', data_root=data_root, with_mask=False,
               data_prefix=dict(img_path='images', normal_path='normals'))
train_dataloader = dict(dataset=dict(
    _delete_=True, **dataset,
    pipeline=load + _base_.dense_sample_train_steps +
    _base_.dense_sample_normal_target + [_base_.dense_sample_pack]))
val_dataloader = dict(dataset=dict(
    _delete_=True, **dataset, test_mode=True,
    pipeline=load + _base_.dense_sample_test_steps +
    _base_.dense_sample_normal_target + [_base_.dense_sample_test_pack]))
test_dataloader = val_dataloader
