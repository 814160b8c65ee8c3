"""What the PyTorch probes of the real-GPU checks share: import PyTorch, make sure it sees a
CUDA device, run one command, and print its result as one JSON line. Exit status: 0 done,
1 the command failed (the error is in the JSON), 3 no PyTorch or no CUDA device."""
import json


def run(command):
    """command(torch) returns a dict of results; prints it with torch_version and returns 0."""
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"error": f"PyTorch is not importable: {e}"}))
        return 3
    if not torch.cuda.is_available():
        print(json.dumps({"error": "torch.cuda.is_available() is False: no usable CUDA device"}))
        return 3
    try:
        res = command(torch)
    except Exception as e:  # reported as a failure of the check, with what went wrong
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
        return 1
    res["torch_version"] = torch.__version__
    print(json.dumps(res))
    return 0
