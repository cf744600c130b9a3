# The tiny18 backbone with the 4K windowed tokenizer stem, as in
# tests/data/official_parity/tiny18_4k.safetensors.
_base_ = ['./tiny18_backbone_1k.py']
model = dict(img_size=(256, 192), use_tokenizer=True)
input_shape = (2, 3, 256, 192)
