# Keypoint metainfo of a 21-keypoint hand (the COCO-WholeBody hand layout and
# sigmas), in mmpose's dataset_info format: read with
# metainfo=dict(from_file='configs/_base_/datasets/hand21.py') (docs/custom_data.md).
# Each keypoint: name, id, drawing color, type ('upper' / 'lower' for
# mmpose's half-body augmentation, '' for none) and swap: the name of its
# mirror image under a horizontal flip ('' for none). A hand has no left/right
# keypoints; a body set would give e.g. swap='right_wrist' for 'left_wrist'
# (and the reverse), from which mmpose derives the flip indices used by
# RandomFlip and the flip test.
fingers = [('thumb', [255, 128, 0]), ('forefinger', [255, 153, 255]),
           ('middle_finger', [102, 178, 255]), ('ring_finger', [255, 51, 51]),
           ('pinky_finger', [0, 255, 0])]
names = ['wrist'] + [f'{finger}{i}' for finger, _ in fingers
                     for i in range(1, 5)]
colors = [[255, 255, 255]] + [color for _, color in fingers for _ in range(4)]
links = [(('wrist' if i == 1 else f'{finger}{i - 1}'), f'{finger}{i}', color)
         for finger, color in fingers for i in range(1, 5)]
dataset_info = dict(
    dataset_name='hand21',
    paper_info=dict(
        author='Jin, Sheng and Xu, Lumin and Xu, Jin and Wang, Can and Liu, '
        'Wentao and Qian, Chen and Ouyang, Wanli and Luo, Ping',
        title='Whole-Body Human Pose Estimation in the Wild',
        container='ECCV', year='2020',
        homepage='https://github.com/jin-s13/COCO-WholeBody/'),
    keypoint_info={i: dict(name=name, id=i, color=color, type='', swap='')
                   for i, (name, color) in enumerate(zip(names, colors))},
    skeleton_info={i: dict(link=(a, b), id=i, color=color)
                   for i, (a, b, color) in enumerate(links)},
    joint_weights=[1.0] * 21,
    # COCO-WholeBody hand sigmas (OKS falloff per keypoint)
    sigmas=[0.029, 0.022, 0.035, 0.037, 0.047, 0.026, 0.025, 0.024, 0.035,
            0.018, 0.024, 0.022, 0.026, 0.017, 0.021, 0.021, 0.032, 0.02,
            0.019, 0.022, 0.031])
