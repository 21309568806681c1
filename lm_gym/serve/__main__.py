"""``python -m lm_gym.serve ENV_ID [options]``: serve an lm-gym task over OpenEnv's protocol;
``python -m lm_gym.serve export ENV_ID DIR [options]``: write its OpenEnv environment package (see docs/serving.md)."""

import sys

from lm_gym.serve.app import serve
from lm_gym.serve.config import parse_args

if __name__ == "__main__":
    if sys.argv[1:2] == ["export"]:
        from lm_gym.serve.export import main

        main(sys.argv[2:])
    else:
        serve(parse_args())
