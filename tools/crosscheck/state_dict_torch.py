#!/usr/bin/env python3
"""A Conv2d + BatchNorm2d + LSTM model in PyTorch 1.13, saved for tapegrad's state_dict round trip.

    /usr/bin/python3 tools/crosscheck/state_dict_torch.py tests/data

Builds the model with a fixed seed, gives BatchNorm2d non-default affine parameters and running
statistics (three training-mode passes over random batches), switches to eval mode, and writes:

  conv_bn_lstm.safetensors     the model's state_dict (float32; num_batches_tracked int64)
  conv_bn_lstm_io.safetensors  "input" [2, 1, 6, 8], the LSTM's input sequence "lstm_input"
                               [2, 8, 24] and the model's "output" [2, 3], all float32

tests/state_dict_torch_tests.cpp builds the same architecture in tapegrad, loads the state_dict
with strict load_state_dict and compares the output, and checks that tapegrad's own state_dict
has the same keys, shapes and dtypes. The safetensors package is not installable here, so the
format (8-byte little-endian header length, JSON header padded with spaces to a multiple of 8,
then the raw little-endian tensors back to back) is written by hand with json and numpy;
tools/safetensors_check.py checks the files.
"""
import json
import struct
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.int32: "I32",
          torch.bool: "BOOL"}


class ConvBnLstm(nn.Module):
    """conv -> batch norm -> relu over a [N, 1, 6, 8] image, read column by column (8 steps of
    4 channels x 6 rows) by an LSTM; a linear head on the last step's hidden state."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.lstm = nn.LSTM(24, 5, batch_first=True)
        self.head = nn.Linear(5, 3)

    def sequence(self, x):
        h = torch.relu(self.bn(self.conv(x)))                       # [N, 4, 6, 8]
        return h.permute(0, 3, 1, 2).reshape(x.shape[0], 8, 24)     # [N, 8 steps, 4 * 6]

    def forward(self, x):
        out, _ = self.lstm(self.sequence(x))
        return self.head(out[:, -1])


def save_safetensors(tensors, path, metadata):
    header = {"__metadata__": metadata}
    offset = 0
    blobs = []
    for name, t in tensors.items():
        data = t.detach().contiguous().numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    out_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data")
    torch.manual_seed(0)
    model = ConvBnLstm()
    with torch.no_grad():
        model.bn.weight.uniform_(0.5, 1.5)
        model.bn.bias.uniform_(-0.5, 0.5)
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(4, 1, 6, 8) * 2 + 0.5)
    model.eval()
    x = torch.randn(2, 1, 6, 8)
    with torch.no_grad():
        seq, y = model.sequence(x), model(x)
    meta = {"made_by": "tools/crosscheck/state_dict_torch.py", "torch": torch.__version__}
    save_safetensors(model.state_dict(), out_dir / "conv_bn_lstm.safetensors", meta)
    save_safetensors({"input": x, "lstm_input": seq, "output": y},
                     out_dir / "conv_bn_lstm_io.safetensors", meta)
    for name, t in model.state_dict().items():
        print(f"{name:24s} {str(t.dtype):14s} {list(t.shape)}")


if __name__ == "__main__":
    main()
