"""FrameReader: images, arrays, folders, videos; unreadable files skipped."""
import cv2
import numpy as np
import pytest

from sapiens2_mm.apis import FrameReader


def _write_video(path, frames, fps=5.0):
    h, w = frames[0].shape[:2]
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*'mp4v'), fps,
                             (w, h))
    for f in frames:
        writer.write(f)
    writer.release()


def test_folder_with_bad_files_and_video(tmp_path):
    rng = np.random.default_rng(0)
    img = rng.integers(0, 255, (40, 30, 3), dtype=np.uint8)
    cv2.imwrite(str(tmp_path / 'a.png'), img)
    (tmp_path / 'b.jpg').write_bytes(b'not an image')
    (tmp_path / 'c.mp4').write_bytes(b'not a video')
    (tmp_path / 'notes.txt').write_text('ignored')
    frames = [np.full((32, 48, 3), 40 * i, np.uint8) for i in range(3)]
    _write_video(tmp_path / 'd.mp4', frames)
    reader = FrameReader([str(tmp_path), img[..., 0]])
    out = list(reader)
    names = [f.name for f in out]
    assert names == ['a.png', 'd_000000.jpg', 'd_000001.jpg', 'd_000002.jpg',
                     'array_000000.png']
    np.testing.assert_array_equal(out[0].image, img)  # lossless PNG
    assert out[1].video.endswith('d.mp4') and out[3].frame_index == 2
    assert out[1].fps == pytest.approx(5.0)
    # mp4v is lossy: frames come back close to their flat grey levels
    assert abs(float(out[3].image.mean()) - 80) < 3
    assert out[4].image.shape == (40, 30, 3)  # grey array -> 3 channels
    skipped = dict(reader.skipped)
    assert set(skipped) == {str(tmp_path / 'b.jpg'), str(tmp_path / 'c.mp4')}


def test_errors():
    with pytest.raises(FileNotFoundError, match='does not exist'):
        FrameReader('/no/such/file.jpg')
    with pytest.raises(ValueError, match='uint8'):
        FrameReader(np.zeros((4, 4, 3), np.float32))
    with pytest.raises(ValueError, match=r'\(H, W, 3\)'):
        FrameReader(np.zeros((4, 4, 3, 2), np.uint8))


def test_names_mirror_folders_and_stems_stay_unique(tmp_path):
    img = np.zeros((8, 6, 3), np.uint8)
    for rel in ('cam1/0001.jpg', 'cam2/0001.jpg', 'cam1/a.jpg', 'cam1/a.png'):
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        cv2.imwrite(str(tmp_path / rel), img)
    (tmp_path / 'none').mkdir()
    reader = FrameReader([str(tmp_path / 'cam1'), str(tmp_path / 'cam2'),
                          str(tmp_path / 'none'),
                          str(tmp_path / 'cam1' / 'a.jpg')])  # given twice
    frames = list(reader)
    assert [(f.name, f.stem) for f in frames] == [
        ('cam1/0001.jpg', 'cam1/0001'), ('cam1/a.jpg', 'cam1/a_jpg'),
        ('cam1/a.png', 'cam1/a_png'), ('cam2/0001.jpg', 'cam2/0001')]
    (folder, reason), = reader.skipped
    assert folder.endswith('none') and '.jpg' in reason and '.mp4' in reason
    reader.leave_out({'cam1/a.png'})
    assert [f.name for f in reader] == ['cam1/0001.jpg', 'cam1/a.jpg',
                                        'cam2/0001.jpg']
    assert reader.num_done == 1
