"""``python -m lm_gym.serve ENV_ID [options]``: serve an lm-gym task over OpenEnv's protocol (see docs/serving.md)."""

from lm_gym.serve.app import serve
from lm_gym.serve.config import parse_args

if __name__ == "__main__":
    serve(parse_args())
