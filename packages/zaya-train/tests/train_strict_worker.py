"""train_dist_worker.py's runs under strict devices (tests/strict_devices.py): every collective they make is
checked against NCCL's device rule, so a CPU (gloo) run fails where a GPU run under NCCL would. Usage (under
torchrun): train_strict_worker.py CHECKED.json --jobs JOBS.json; rank 0 writes the collectives it checked
("collective module.function" -> tensors) to CHECKED.json."""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))
from strict_devices import strict_devices
from train_dist_worker import main

if __name__ == "__main__":
    record = Path(sys.argv.pop(1))
    with strict_devices("cpu") as strict:  # the training device of train_dist_worker's runs
        main()
    if os.environ.get("RANK", "0") == "0":
        record.write_text(json.dumps(strict.checked, indent=1))
