"""Make the bundled body-part sample (tests/data/seg_sample) from COCO-WholeBody.

The four COCO photos in tests/data/coco_sample have person polygons and
COCO-WholeBody keypoints and boxes but no part labels, so coarse 29-class label
maps are derived from them:

1. Each image is downscaled to ``--long-side`` px (INTER_AREA) and saved as JPEG.
2. Background is 0. Each non-crowd person polygon is filled, larger persons
   first so that smaller (usually nearer) ones are drawn on top.
3. Inside a person mask every pixel takes the part of the nearest *skeleton
   segment* built from the visible body keypoints (COCO "left" = the person's
   left, as in Sapiens' Left_* classes):
   shoulder-elbow -> *_Upper_Arm, elbow-wrist -> *_Lower_Arm, wrist + 1/3 of
   the forearm -> *_Hand, hip-knee -> *_Upper_Leg, knee-ankle -> *_Lower_Leg,
   ankle-toes (WholeBody foot keypoints) -> *_Foot; shoulders, hips and the
   shoulder-hip lines -> Torso; nose, eyes, ears and nose-to-neck -> Face_Neck.
4. WholeBody face / hand boxes (when valid) override the mask pixels inside
   them with Face_Neck / Left_Hand / Right_Hand.
5. Persons with fewer than 5 visible body keypoints, crowd regions and pixels
   farther than 0.6 x the person's torso length from every segment are set to
   255 (ignore): their part is unknown.

The labels are approximate (clothing, hair and the mouth classes never occur);
they exist to exercise the pipeline and to let a tiny model overfit.
Run: ``python tools/dataset_converters/make_seg_sample.py``.
"""
import argparse
import json
import os
import os.path as osp

import cv2
import numpy as np

# COCO-17 indices
NOSE, LEYE, REYE, LEAR, REAR = 0, 1, 2, 3, 4
LSHO, RSHO, LELB, RELB, LWRI, RWRI = 5, 6, 7, 8, 9, 10
LHIP, RHIP, LKNE, RKNE, LANK, RANK = 11, 12, 13, 14, 15, 16
# seg29 ids
FACE_NECK, TORSO = 3, 22
L_FOOT, L_HAND, L_LARM, L_LLEG, L_UARM, L_ULEG = 5, 6, 7, 8, 11, 12
R_FOOT, R_HAND, R_LARM, R_LLEG, R_UARM, R_ULEG = 14, 15, 16, 17, 20, 21
IGNORE = 255


def _segments(kpts: np.ndarray, foot: np.ndarray):
    """(p, q, label) segments between visible keypoints."""
    vis = kpts[:, 2] > 0
    pts = kpts[:, :2]
    segs = []

    def add(a, b, label, pa=None, pb=None):
        pa = pts[a] if pa is None else pa
        pb = pts[b] if pb is None else pb
        segs.append((pa, pb, label))

    for a, b, label in ((LSHO, LELB, L_UARM), (LELB, LWRI, L_LARM),
                        (RSHO, RELB, R_UARM), (RELB, RWRI, R_LARM),
                        (LHIP, LKNE, L_ULEG), (LKNE, LANK, L_LLEG),
                        (RHIP, RKNE, R_ULEG), (RKNE, RANK, R_LLEG),
                        (LSHO, RSHO, TORSO), (LHIP, RHIP, TORSO),
                        (LSHO, LHIP, TORSO), (RSHO, RHIP, TORSO),
                        (LSHO, RHIP, TORSO), (RSHO, LHIP, TORSO),
                        (NOSE, LEYE, FACE_NECK), (NOSE, REYE, FACE_NECK),
                        (LEYE, LEAR, FACE_NECK), (REYE, REAR, FACE_NECK)):
        if vis[a] and vis[b]:
            add(a, b, label)
    for elb, wri, label in ((LELB, LWRI, L_HAND), (RELB, RWRI, R_HAND)):
        if vis[elb] and vis[wri]:
            tip = pts[wri] + (pts[wri] - pts[elb]) / 3
            add(wri, wri, label, pb=tip)
    if vis[NOSE] and vis[LSHO] and vis[RSHO]:
        add(NOSE, NOSE, FACE_NECK, pb=(pts[LSHO] + pts[RSHO]) / 2)
    # WholeBody foot keypoints: left big toe, small toe, heel, then right.
    for ank, sl, label in ((LANK, slice(0, 3), L_FOOT),
                           (RANK, slice(3, 6), R_FOOT)):
        toes = foot[sl]
        if vis[ank]:
            for toe in toes[toes[:, 2] > 0]:
                add(ank, ank, label, pb=toe[:2])
    return segs


def _point_segment_distance(xy: np.ndarray, p: np.ndarray, q: np.ndarray):
    d = q - p
    t = ((xy - p) @ d) / max(float(d @ d), 1e-9)
    proj = p + np.clip(t, 0, 1)[:, None] * d
    return np.linalg.norm(xy - proj, axis=1)


def _torso_length(kpts: np.ndarray) -> float:
    vis = kpts[:, 2] > 0
    pts = kpts[:, :2]
    lengths = [np.linalg.norm(pts[s] - pts[h])
               for s, h in ((LSHO, LHIP), (RSHO, RHIP)) if vis[s] and vis[h]]
    if lengths:
        return float(np.mean(lengths))
    box = np.ptp(pts[vis], axis=0)
    return float(max(box.max(), 1.0)) / 2


def _box_mask(box, shape, scale):
    x, y, w, h = (np.asarray(box, float) * scale)
    mask = np.zeros(shape, bool)
    if w > 0 and h > 0:
        mask[int(y):int(np.ceil(y + h)), int(x):int(np.ceil(x + w))] = True
    return mask


def label_person(ann: dict, shape, scale: float) -> np.ndarray:
    """Part labels (255 outside the person) for one annotation."""
    out = np.full(shape, IGNORE, np.uint8)
    mask = np.zeros(shape, np.uint8)
    for poly in ann['segmentation']:
        pts = np.round(np.asarray(poly).reshape(-1, 2) * scale).astype(np.int32)
        cv2.fillPoly(mask, [pts], 1)
    inside = mask.astype(bool)
    kpts = np.asarray(ann['keypoints'], float).reshape(-1, 3)
    kpts[:, :2] *= scale
    foot = np.asarray(ann.get('foot_kpts', [0] * 18), float).reshape(-1, 3)
    foot[:, :2] *= scale
    if (kpts[:, 2] > 0).sum() < 5:
        return out, inside
    segs = _segments(kpts, foot)
    ys, xs = np.nonzero(inside)
    xy = np.stack([xs, ys], 1).astype(float)
    dists = np.stack([_point_segment_distance(xy, p, q) for p, q, _ in segs])
    labels = np.array([lab for _, _, lab in segs], np.uint8)
    nearest = dists.argmin(0)
    part = labels[nearest]
    part[dists.min(0) > 0.6 * _torso_length(kpts)] = IGNORE
    out[ys, xs] = part
    for key, valid, label in (('face_box', 'face_valid', FACE_NECK),
                              ('lefthand_box', 'lefthand_valid', L_HAND),
                              ('righthand_box', 'righthand_valid', R_HAND)):
        if ann.get(valid):
            out[_box_mask(ann[key], shape, scale) & inside] = label
    return out, inside


def make_label_map(anns, shape, scale: float) -> np.ndarray:
    label = np.zeros(shape, np.uint8)
    for ann in sorted(anns, key=lambda a: -a['area']):
        if ann.get('iscrowd') or not isinstance(ann['segmentation'], list):
            label[:] = np.where(_box_mask(ann['bbox'], shape, scale), IGNORE,
                                label)
            continue
        part, inside = label_person(ann, shape, scale)
        label[inside] = part[inside]
    return label


def main():
    here = osp.dirname(osp.abspath(__file__))
    repo = osp.dirname(osp.dirname(here))
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--src', default=osp.join(repo, 'tests/data/coco_sample'))
    parser.add_argument('--ann', default='test_coco_wholebody.json')
    parser.add_argument('--out', default=osp.join(repo, 'tests/data/seg_sample'))
    parser.add_argument('--long-side', type=int, default=256)
    args = parser.parse_args()
    with open(osp.join(args.src, args.ann)) as f:
        coco = json.load(f)
    os.makedirs(osp.join(args.out, 'images'), exist_ok=True)
    os.makedirs(osp.join(args.out, 'labels'), exist_ok=True)
    for img_info in coco['images']:
        img = cv2.imread(osp.join(args.src, img_info['file_name']))
        scale = args.long_side / max(img.shape[:2])
        size = (round(img.shape[1] * scale), round(img.shape[0] * scale))
        small = cv2.resize(img, size, interpolation=cv2.INTER_AREA)
        anns = [a for a in coco['annotations'] if a['image_id'] == img_info['id']]
        label = make_label_map(anns, small.shape[:2], scale)
        stem = osp.splitext(img_info['file_name'])[0]
        cv2.imwrite(osp.join(args.out, 'images', stem + '.jpg'), small,
                    [cv2.IMWRITE_JPEG_QUALITY, 90])
        cv2.imwrite(osp.join(args.out, 'labels', stem + '.png'), label)
        present = sorted(int(v) for v in np.unique(label))
        print(f'{stem}: {small.shape[1]}x{small.shape[0]} labels {present}')


if __name__ == '__main__':
    main()
