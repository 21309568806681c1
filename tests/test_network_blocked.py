import socket

import pytest
from pytest_socket import SocketBlockedError


def test_sockets_are_blocked_for_the_whole_suite():
    with pytest.raises(SocketBlockedError):
        socket.create_connection(("127.0.0.1", 9), timeout=1)


def test_hub_loading_fails_fast_offline():
    from transformers import AutoTokenizer

    with pytest.raises(OSError):
        AutoTokenizer.from_pretrained("gpt2")
