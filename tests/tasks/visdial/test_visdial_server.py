"""VisDial-v0 with a visdial-rl server (the HTTP world) and the image features it ranks by."""

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import numpy as np
import pytest

from lm_gym.core.errors import DataUnavailableError
from lm_gym.tasks.visdial import HiddenImage, VisDialEnv
from lm_gym.tasks.visdial.features import load_image_features


class FakeVisDialServer(BaseHTTPRequestHandler):
    """The visdial-rl protocol: /step_rank -> [answer, delta], /fetch_reward_rank -> p0 or the last delta."""

    requests: ClassVar[list] = []

    def do_POST(self):
        form = urllib.parse.parse_qs(
            self.rfile.read(int(self.headers["Content-Length"])).decode(), keep_blank_values=True
        )
        fields = {key: values[0] for key, values in form.items()}
        self.requests.append((self.path, fields))
        history = json.loads(fields["history"])
        if self.path == "/step_rank":
            reply = [f"answer {len(history)}", 0.125]
        elif self.path == "/fetch_reward_rank":
            reply = 0.5 if not history else 0.125
        else:
            self.send_error(404)
            return
        body = json.dumps(reply).encode() if "broken" not in fields["caption"] else b"<html>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_server():
    FakeVisDialServer.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeVisDialServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", FakeVisDialServer.requests
    server.shutdown()
    server.server_close()


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_http_world_speaks_the_visdial_rl_protocol(fake_server):
    url, requests = fake_server
    features = {i: [float(i), 1.0] for i in range(10)}
    env = VisDialEnv(num_images=10, server_url=url + "/step_rank", image_features=features)
    observation, info = env.reset(seed=0)
    assert info["percentile"] == 0.5
    path, fields = requests[-1]
    assert path == "/fetch_reward_rank" and json.loads(fields["history"]) == [] and fields["caption"] == observation
    assert json.loads(fields["img_features"]) == features[info["meta"]["image_id"]]
    rewards, percentiles = [], []
    for turn in range(2):
        _, reward, terminated, _, info = env.step(f"question {turn}?")
        rewards.append(reward)
        percentiles.append(info["percentile"])
    assert info["answer"] == "answer 3" and percentiles == [0.625, 0.75] and rewards == [-1.0, 0.0] and terminated
    path, fields = requests[-1]
    assert path == "/step_rank" and json.loads(fields["generation_kwargs"]) == {"inference": "greedy", "beamSize": 1}
    assert json.loads(fields["history"]) == [
        {"speaker": "question", "text": "question 0?"},
        {"speaker": "answer", "text": "answer 1"},
        {"speaker": "question", "text": "question 1?"},
    ]
    assert [p for p, _ in requests] == ["/fetch_reward_rank", "/step_rank", "/step_rank"]  # deltas are remembered


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_http_world_errors_name_the_url(fake_server):
    url, _ = fake_server
    env = VisDialEnv(num_images=10, server_url=url, image_features={i: [0.0] for i in range(10)})
    env.images = (HiddenImage(0, 0, "broken caption"),)  # the fake server answers it with HTML
    with pytest.raises(DataUnavailableError, match=f"{url}/fetch_reward_rank failed"):
        env.reset(seed=0)
    closed = VisDialEnv(
        num_images=10, server_url="http://127.0.0.1:9", image_features={i: [0.0] for i in range(10)}, server_timeout=2
    )
    with pytest.raises(DataUnavailableError, match=r"http://127.0.0.1:9/fetch_reward_rank failed"):
        closed.reset(seed=0)


def test_image_features_from_hdf5(tmp_path):
    path = tmp_path / "features_val.h5"
    try:
        import h5py
    except ImportError:
        with pytest.raises(DataUnavailableError, match=r'needs h5py: pip install "lm-gym\[visdial\]"'):
            load_image_features(path)
        return
    with h5py.File(path, "w") as handle:
        handle["image_id"] = np.array([5, 3])
        handle["features"] = np.array([[[3.0, 0.0], [3.0, 8.0]], [[1.0, 1.0], [1.0, 1.0]]])  # (N, boxes, dim)
    features = load_image_features(path, [3, 5])
    assert np.allclose(features[5], [0.6, 0.8]) and np.allclose(features[3], [2**-0.5, 2**-0.5])
    with pytest.raises(DataUnavailableError, match="no features for 1 image ids"):
        load_image_features(path, [4])
