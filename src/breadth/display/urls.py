"""URLs as breadth prints and checks them: without credentials, and with a hint when the
scheme is missing. Standard library only, below the stack and tracking modules that use it."""

from __future__ import annotations

import re
import urllib.parse


def without_userinfo(url: str) -> str:
    """A URL safe to print: "user:password@" removed (MLFLOW_TRACKING_URI may carry them).

    >>> without_userinfo("https://me:s3cret@mlflow.example.com:5000/x")
    'https://mlflow.example.com:5000/x'
    >>> without_userinfo("http://127.0.0.1:5000")
    'http://127.0.0.1:5000'
    """
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def scheme_hint(url: str) -> str:
    """A sentence for an error when `url` looks like host:port without a scheme (clients would
    read it as a local path), else "".

    >>> scheme_hint("127.0.0.1:5000")
    ' It has no scheme: write http://127.0.0.1:5000.'
    >>> scheme_hint("http://127.0.0.1:5000") + scheme_hint("sqlite:///x.db")
    ''
    """
    if re.fullmatch(r"[\w.-]+:\d+(/\S*)?", url):
        return f" It has no scheme: write http://{url}."
    return ""
