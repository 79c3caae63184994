#!/usr/bin/env python3
"""An LTI 1.3 platform (an LMS) on loopback, for testing quizd as an LTI tool.

The LTI-specific work is done by the independent `lti1p3platform` package (PyPI): building
OIDC login initiations, validating the tool's authentication request, building and signing
launch messages (resource link and Deep Linking), issuing access tokens for the tool's client
assertion (verified against the tool's JWKS), validating Deep Linking responses, and the
Assignment and Grade Services and Names and Role Provisioning Services endpoints with their
bearer-token checks. This file adds HTTP (the standard library's server), storage, a few
stricter checks the package leaves out, and deliberate tampering for negative tests.

    python lti_platform.py --tool http://127.0.0.1:8080

prints `READY <port>` once it listens on 127.0.0.1 and stops when its standard input closes.

Endpoints (the test drives the browser's part itself):
    GET  /.well-known/jwks.json       the platform's public keys
    POST /scenarios                   a launch to perform (JSON), answers {"hint": ...}
    GET  /initiate?hint=H             302 (or a self-posting form) to quizd's login URL
    GET|POST /auth                    the OIDC authorization endpoint: a form posting the id_token
    POST /token                       client-credentials grant with a JWT client assertion
    GET|POST /lineitems               AGS line item container
    GET  /lineitems/N                 a line item
    POST /lineitems/N/scores          AGS scores
    GET  /nrps/CONTEXT                NRPS context membership
    POST /deep_link_return            Deep Linking response
    GET  /recorded                    what the platform received (JSON)
    GET  /course?hint=H               a course page embedding the tool, with a storage frame
    GET  /storage-frame               the platform's postMessage storage (lti.put_data/get_data)
    POST /control                     {"rotate_key": true} | {"withdraw_previous_keys": true}
                                      | {"fail_scores": n} | {"roster": {...}}
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import sys
import threading
import time
import typing as t
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlencode, urlparse

import jwt  # PyJWT, a dependency of lti1p3platform
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from lti1p3platform.exceptions import LtiException, LtiServiceException
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.membership import Context
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import (
    AssignmentsGradesService,
    NamesRoleProvisioningService,
)

CLIENT_ID = "quizd-tool"
DEPLOYMENT_ID = "deployment-1"
SCORE_MEDIA_TYPE = "application/vnd.ims.lis.v1.score+json"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"


def new_key_pair() -> t.Tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(
            serialization.Encoding.PEM,
            serialization.PublicFormat.SubjectPublicKeyInfo,
        )
        .decode()
    )
    return private, public


class State:
    """Everything the platform knows; one lock guards it."""

    def __init__(self, base: str, tool: str) -> None:
        self.lock = threading.RLock()
        self.base = base
        self.tool = tool.rstrip("/")
        self.keys = [new_key_pair()]  # newest last; the newest signs
        self.rogue = new_key_pair()  # never published
        self.withdrawn: t.List[t.Tuple[str, str]] = []  # published once, no longer
        self.scenarios: t.Dict[str, t.Dict[str, t.Any]] = {}
        self.scores: t.List[t.Dict[str, t.Any]] = []
        self.lineitems: t.Dict[str, t.Dict[str, t.Any]] = {}
        self.deep_link_responses: t.List[t.Dict[str, t.Any]] = []
        self.tokens_issued: t.List[t.Dict[str, t.Any]] = []
        self.assertion_jtis: t.Set[str] = set()
        self.auth_requests: t.List[t.Dict[str, t.Any]] = []
        self.errors: t.List[str] = []
        self.id_tokens: t.Dict[str, str] = {}
        self.fail_scores = 0
        self.roster: t.Dict[str, t.List[t.Dict[str, t.Any]]] = {}
        self.storage_log: t.List[t.Dict[str, t.Any]] = []

    @property
    def launch_url(self) -> str:
        return f"{self.tool}/v1/lti/launch"

    def registration(self) -> Registration:
        private, public = self.keys[-1]
        return (
            Registration()
            .set_iss(self.base)
            .set_client_id(CLIENT_ID)
            .set_deployment_id(DEPLOYMENT_ID)
            .set_launch_url(self.launch_url)
            .set_deeplink_launch_url(self.launch_url)
            .set_oidc_login_url(f"{self.tool}/v1/lti/login")
            .set_tool_key_set_url(f"{self.tool}/.well-known/jwks.json")
            .set_platform_public_key(public)
            .set_platform_private_key(private)
        )

    def jwks(self) -> t.Dict[str, t.Any]:
        return {"keys": [Registration.get_jwk(public) for _, public in self.keys]}


STATE: State


class Platform(LTI1P3PlatformConfAbstract):
    """The package's platform configuration, over the harness's state."""

    def init_platform_config(self, **kwargs: t.Any) -> None:
        self._registration = STATE.registration()

    def get_registration_by_params(self, **kwargs: t.Any) -> Registration:
        return STATE.registration()


class HarnessRequest(Request):
    def build_metadata(self, request: t.Dict[str, t.Any]) -> t.Any:
        return request


class Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs: t.Any) -> None:
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url: str) -> str:
        return url


class Launch(LTIAdvantageMessageLaunchAbstract):
    def render_launch_form(self, launch_data: t.Dict[str, t.Any], **kwargs: t.Any) -> t.Dict[str, t.Any]:
        return launch_data


class Grades(AssignmentsGradesService):
    """AGS over the harness's line items. The package checks the bearer token and scopes."""

    def find_lineitems(self, page: int = 1, limit: t.Optional[int] = None, line_item_id=None,
                       resource_link_id=None, resource_id=None, tag=None, **kwargs: t.Any):
        with STATE.lock:
            items = [
                i for i in STATE.lineitems.values()
                if resource_link_id is None or i.get("resourceLinkId") == resource_link_id
            ]
        return {"content": items, "has_next": False, "next": None}

    def find_lineitem(self, line_item_id: str):
        from lti1p3platform.exceptions import LineItemNotFoundException

        with STATE.lock:
            item = STATE.lineitems.get(line_item_id)
        if item is None:
            raise LineItemNotFoundException()
        return item

    def create_lineitem(self, creation_data):
        return create_lineitem(dict(creation_data))

    def update_lineitem(self, update_data):
        with STATE.lock:
            STATE.lineitems[update_data["id"]].update(update_data)
            return STATE.lineitems[update_data["id"]]

    def delete_lineitem(self, line_item_id: str) -> None:
        with STATE.lock:
            STATE.lineitems.pop(line_item_id, None)

    def update_score(self, line_item_id: str, score) -> UpdateScoreStatus:
        from lti1p3platform.exceptions import LineItemNotFoundException

        with STATE.lock:
            if line_item_id not in STATE.lineitems:
                raise LineItemNotFoundException()
        problems = check_score(score, self.request.headers.get("Content-Type", ""))
        if problems:
            raise LtiServiceException("; ".join(problems), 400)
        with STATE.lock:
            if STATE.fail_scores > 0:
                STATE.fail_scores -= 1
                raise LtiServiceException("the gradebook is unavailable (simulated)", 500)
            STATE.scores.append({"lineitem": line_item_id, **score})
        return UpdateScoreStatus.SUCCESS

    def get_results(self, line_item_id: str, page: int = 1, limit=None, user_id=None, **kwargs):
        with STATE.lock:
            results = [s for s in STATE.scores if s["lineitem"] == line_item_id]
        return {"content": results, "has_next": False, "next": None}


class Roster(NamesRoleProvisioningService):
    def __init__(self, request: Request, platform: Platform, context_id: str) -> None:
        super().__init__(request, platform, f"{STATE.base}/nrps/{context_id}")
        self.context_id = context_id

    def get_member_data_page(self, page: int = 1, limit=None, role=None, since=None, **kwargs):
        with STATE.lock:
            members = list(STATE.roster.get(self.context_id, []))
        return {"content": members, "has_next": False, "next": None}

    def get_context_by_id(self) -> Context:
        return Context(id=self.context_id, label=self.context_id, title=self.context_id)


def check_score(score: t.Any, content_type: str) -> t.List[str]:
    """AGS 2.0 §3.4: what a Score must be."""
    problems = []
    if content_type.split(";")[0].strip() != SCORE_MEDIA_TYPE:
        problems.append(f"content type {content_type!r} is not {SCORE_MEDIA_TYPE}")
    if not isinstance(score, dict):
        return problems + ["the score is not a JSON object"]
    for field in ("userId", "activityProgress", "gradingProgress", "timestamp"):
        if field not in score:
            problems.append(f"{field} is missing")
    if score.get("activityProgress") not in ("Initialized", "Started", "InProgress", "Submitted", "Completed"):
        problems.append("activityProgress is not an AGS value")
    if score.get("gradingProgress") not in ("FullyGraded", "Pending", "PendingManual", "Failed", "NotReady"):
        problems.append("gradingProgress is not an AGS value")
    if "scoreGiven" in score:
        given, maximum = score.get("scoreGiven"), score.get("scoreMaximum")
        if not isinstance(given, (int, float)) or not isinstance(maximum, (int, float)):
            problems.append("scoreGiven and scoreMaximum must be numbers")
        elif maximum <= 0 or given < 0:
            problems.append("scoreMaximum must be positive and scoreGiven not negative")
    try:
        from datetime import datetime

        stamp = str(score.get("timestamp", ""))
        parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        if parsed.tzinfo is None:
            problems.append("timestamp has no time zone")
    except ValueError:
        problems.append("timestamp is not ISO 8601")
    return problems


def create_lineitem(data: t.Dict[str, t.Any]) -> t.Dict[str, t.Any]:
    with STATE.lock:
        number = str(len(STATE.lineitems) + 1)
        item = {**data, "id": f"{STATE.base}/lineitems/{number}"}
        STATE.lineitems[number] = item
        return item


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign(claims: t.Dict[str, t.Any], how: str) -> str:
    """Signs a launch message, well or in one of the ways quizd must refuse."""
    private, public = STATE.keys[-1]
    kid = Registration.get_jwk(public)["kid"]
    if how == "good":
        return jwt.encode(claims, private, algorithm="RS256", headers={"kid": kid})
    if how == "bad_signature":  # a key the platform does not hold, under its kid
        return jwt.encode(claims, STATE.rogue[0], algorithm="RS256", headers={"kid": kid})
    if how == "unknown_kid":
        return jwt.encode(claims, STATE.rogue[0], algorithm="RS256", headers={"kid": "no-such-key"})
    if how == "hs256":  # the public key as an HMAC secret: the classic algorithm confusion
        header = b64url(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
        body = b64url(json.dumps(claims).encode())
        import hashlib
        import hmac

        mac = hmac.new(public.encode(), f"{header}.{body}".encode(), hashlib.sha256).digest()
        return f"{header}.{body}.{b64url(mac)}"
    if how == "none":
        header = b64url(json.dumps({"alg": "none", "typ": "JWT", "kid": kid}).encode())
        return f"{header}.{b64url(json.dumps(claims).encode())}."
    if how == "withdrawn_key":  # a key the platform published once and has withdrawn
        old_private, old_public = STATE.withdrawn[-1]
        old_kid = Registration.get_jwk(old_public)["kid"]
        return jwt.encode(claims, old_private, algorithm="RS256", headers={"kid": old_kid})
    if how == "tampered_payload":  # signed well, then a claim changed
        token = jwt.encode(claims, private, algorithm="RS256", headers={"kid": kid})
        head, _, sig = token.split(".")
        changed = dict(claims, sub="someone-else")
        return f"{head}.{b64url(json.dumps(changed).encode())}.{sig}"
    raise ValueError(f"unknown signing mode {how}")


def build_launch(scenario: t.Dict[str, t.Any], preflight: t.Dict[str, str]) -> t.Dict[str, t.Any]:
    """The launch message for a scenario, built by the package from the authentication request."""
    platform = Platform()
    request = HarnessRequest({"method": "GET", "get_data": preflight, "form_data": {}, "headers": {},
                              "content_type": None, "path": "/auth", "json": None})
    launch = Launch(request, platform)
    launch._registration = platform.get_registration()
    # The package's checks of the authentication request: nonce, state, redirect_uri, client_id.
    launch.validate_preflight_response(preflight)
    user = scenario["user"]
    launch.set_user_data(user["sub"], scenario.get("roles", [LEARNER]), full_name=user.get("name"),
                         email_address=user.get("email"))
    if scenario.get("context"):
        c = scenario["context"]
        launch.set_launch_context_claim(c["id"], context_title=c.get("title"), context_label=c.get("label"))
        launch.set_nrps(f"{STATE.base}/nrps/{c['id']}")
    if scenario.get("custom"):
        launch.set_custom_parameters_claim(scenario["custom"])
    target = scenario.get("target_link_uri") or STATE.launch_url
    launch.set_launch_url(target)
    if scenario.get("message_type") == "deep_linking":
        launch.set_dl(f"{STATE.base}/deep_link_return", title="Place a quiz",
                      accept_types={"ltiResourceLink"}, extra_data=scenario.get("dl_data"))
        if "dl_accept_multiple" in scenario:  # the package always accepts several
            settings = launch._deep_linking_launch_data[
                "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"]
            settings["accept_multiple"] = bool(scenario["dl_accept_multiple"])
    else:
        link = scenario.get("resource_link") or {"id": "rl-" + uuid.uuid4().hex[:8]}
        launch.set_resource_link_claim(link["id"], title=link.get("title"))
        ags = scenario.get("ags", "lineitem")
        if ags == "lineitem":
            lineitem = scenario.get("lineitem") or create_lineitem(
                {"scoreMaximum": 100, "label": link.get("title", "quiz"), "resourceLinkId": link["id"]}
            )["id"]
            launch.set_ags(f"{STATE.base}/lineitems", lineitem, allow_creating_lineitems=False)
        elif ags == "container":  # no line item: the tool is to find or create one
            launch.set_ags(f"{STATE.base}/lineitems", None, allow_creating_lineitems=True)
    if scenario.get("message_type") != "deep_linking":
        # The package's deep-linking launch URL would otherwise override the target.
        launch._dl = None
    data = launch.generate_launch_request()
    claims = jwt.decode(data["id_token"], options={"verify_signature": False})
    return {"claims": claims, "state": data["state"], "redirect_uri": launch._redirect_url}


def tamper(claims: t.Dict[str, t.Any], spec: t.Dict[str, t.Any]) -> t.Dict[str, t.Any]:
    claims = dict(claims)
    for name in spec.get("remove", []):
        claims.pop(name, None)
    for name, value in spec.get("set", {}).items():
        claims[name] = value
    now = int(time.time())
    if "exp_offset" in spec:
        claims["exp"] = now + spec["exp_offset"]
    if "iat_offset" in spec:
        claims["iat"] = now + spec["iat_offset"]
    return claims


class Handler(BaseHTTPRequestHandler):
    server_version = "lti-platform-harness/1"

    def log_message(self, fmt: str, *args: t.Any) -> None:  # quiet; failures are recorded
        pass

    # --- plumbing -------------------------------------------------------------------------
    def body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def form(self) -> t.Dict[str, str]:
        return dict(parse_qsl(self.body().decode(), keep_blank_values=True))

    def query(self) -> t.Dict[str, str]:
        return dict(parse_qsl(urlparse(self.path).query, keep_blank_values=True))

    def send(self, status: int, body: t.Any = None, content_type: str = "application/json",
             headers: t.Optional[t.Dict[str, str]] = None) -> None:
        if isinstance(body, (dict, list)):
            raw = json.dumps(body).encode()
        elif isinstance(body, str):
            raw = body.encode()
        else:
            raw = body or b""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)

    def fail(self, status: int, message: str) -> None:
        with STATE.lock:
            STATE.errors.append(f"{self.command} {self.path}: {message}")
        self.send(status, {"error": message})

    def package_request(self, body: bytes = b"") -> HarnessRequest:
        json_body = None
        if body:
            try:
                json_body = json.loads(body)
            except ValueError:
                json_body = None
        return HarnessRequest({
            "method": self.command,
            "form_data": {},
            "get_data": self.query(),
            "headers": self.headers,  # case-insensitive, as HTTP header names are
            "content_type": self.headers.get("Content-Type"),
            "path": urlparse(self.path).path,
            "json": json_body,
        })

    def package_response(self, resp: t.Any) -> None:
        if 200 <= resp.code < 300:
            data = resp.result
            if isinstance(data, dict) and "content" in data:
                data = data["content"]
            self.send(resp.code, data if data is not None else {}, resp.media_type)
        else:
            self.fail(resp.code, resp.message)

    def dispatch(self) -> None:
        path = urlparse(self.path).path
        try:
            route = ROUTES.get((self.command, path))
            if route is None:
                for (method, prefix), handler in PREFIX_ROUTES.items():
                    if method == self.command and path.startswith(prefix):
                        route = handler
                        break
            if route is None:
                self.fail(404, f"no route {self.command} {path}")
                return
            route(self)
        except Exception as exc:  # a harness bug must show in the test, not hang it
            self.fail(500, f"{type(exc).__name__}: {exc}")

    do_GET = do_POST = do_PUT = do_DELETE = dispatch

    # --- endpoints ------------------------------------------------------------------------
    def jwks(self) -> None:
        with STATE.lock:
            self.send(200, STATE.jwks())

    def add_scenario(self) -> None:
        scenario = json.loads(self.body())
        hint = "s-" + uuid.uuid4().hex[:12]
        with STATE.lock:
            STATE.scenarios[hint] = scenario
        self.send(201, {"hint": hint})

    def initiate(self) -> None:
        hint = self.query().get("hint", "")
        with STATE.lock:
            scenario = STATE.scenarios.get(hint)
        if scenario is None:
            return self.fail(404, "unknown scenario")
        platform = Platform()
        login = Login(None, platform)
        login.set_lti_message_hint(hint=hint)
        login.set_launch_url(scenario.get("target_link_uri") or STATE.launch_url)
        url = login.initiate_login(scenario["user"]["sub"])
        for name, value in scenario.get("login_override", {}).items():
            parsed = urlparse(url)
            q = dict(parse_qsl(parsed.query))
            if value is None:
                q.pop(name, None)
            else:
                q[name] = value
            url = parsed._replace(query=urlencode(q)).geturl()
        if scenario.get("storage_target"):  # LTI client-side postMessage storage offered
            parsed = urlparse(url)
            q = dict(parse_qsl(parsed.query))
            q["lti_storage_target"] = scenario["storage_target"]
            url = parsed._replace(query=urlencode(q)).geturl()
        if scenario.get("login_method") == "post":
            parsed = urlparse(url)
            action = parsed._replace(query="").geturl()
            inputs = "".join(
                f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}" />'
                for k, v in parse_qsl(parsed.query)
            )
            page = f'<form method="POST" action="{html.escape(action)}" id="form">{inputs}</form>'
            return self.send(200, page, "text/html")
        self.send(302, b"", "text/plain", {"Location": url})

    def auth(self) -> None:
        params = self.query() if self.command == "GET" else {**self.query(), **self.form()}
        with STATE.lock:
            STATE.auth_requests.append(params)
        # What LTI 1.3 Core §5.1.1.2 asks of the tool's authentication request.
        expected = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post",
                    "prompt": "none", "client_id": CLIENT_ID, "redirect_uri": STATE.launch_url}
        for name, value in expected.items():
            if params.get(name) != value:
                return self.fail(400, f"authentication request: {name} is {params.get(name)!r}, not {value!r}")
        hint = params.get("lti_message_hint", "")
        with STATE.lock:
            scenario = STATE.scenarios.get(hint)
        if scenario is None:
            return self.fail(400, "authentication request: unknown lti_message_hint")
        if params.get("login_hint") != scenario["user"]["sub"]:
            return self.fail(400, "authentication request: login_hint is not the user's")
        if not params.get("state") or not params.get("nonce"):
            return self.fail(400, "authentication request: state or nonce missing")
        try:
            built = build_launch(scenario, params)
        except Exception as exc:
            return self.fail(400, f"the package refused the authentication request: {type(exc).__name__} {exc}")
        claims = tamper(built["claims"], scenario.get("tamper", {}))
        id_token = sign(claims, scenario.get("tamper", {}).get("sign", "good"))
        with STATE.lock:
            STATE.id_tokens[hint] = id_token
        page = (
            '<!DOCTYPE html><html><body>'
            f'<form method="POST" action="{html.escape(built["redirect_uri"])}" id="form">'
            f'<input type="hidden" name="id_token" value="{html.escape(id_token)}" />'
            f'<input type="hidden" name="state" value="{html.escape(built["state"])}" />'
            '</form><script>document.getElementById("form").submit();</script></body></html>'
        )
        self.send(200, page, "text/html")

    def token(self) -> None:
        form = self.form()
        platform = Platform()
        try:
            answer = platform.get_access_token(form)  # verifies the assertion with the tool's JWKS
        except LtiException as exc:
            return self.fail(401, f"invalid_client: {exc}")
        except Exception as exc:
            return self.fail(400, f"invalid_request: {type(exc).__name__} {exc}")
        # What the package leaves out (Security Framework §4.1.1): who asserts, for whom, once.
        assertion = jwt.decode(form["client_assertion"], options={"verify_signature": False})
        if form.get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
            return self.fail(400, "invalid_request: client_assertion_type")
        if assertion.get("iss") != CLIENT_ID or assertion.get("sub") != CLIENT_ID:
            return self.fail(401, "invalid_client: iss and sub must be the client id")
        aud = assertion.get("aud")
        if f"{STATE.base}/token" not in (aud if isinstance(aud, list) else [aud]):
            return self.fail(401, f"invalid_client: aud {aud!r} is not the token endpoint")
        jti = assertion.get("jti")
        with STATE.lock:
            if not jti or jti in STATE.assertion_jtis:
                return self.fail(401, "invalid_client: jti missing or reused")
            STATE.assertion_jtis.add(jti)
            STATE.tokens_issued.append({"scope": answer["scope"], "at": time.time()})
        self.send(200, answer)

    def lineitems(self) -> None:
        platform = Platform()
        service = Grades(self.package_request(self.body()), platform, f"{STATE.base}/lineitems")
        if self.command == "GET":
            self.package_response(service.handle_resp(service.handle_get_lineitems))
        else:
            self.package_response(service.handle_resp(service.handle_create_lineitem))

    def lineitem(self) -> None:
        parts = urlparse(self.path).path.strip("/").split("/")  # lineitems/N[/scores]
        number = parts[1] if len(parts) > 1 else ""
        platform = Platform()
        service = Grades(self.package_request(self.body()), platform, f"{STATE.base}/lineitems",
                         f"{STATE.base}/lineitems/{number}")
        if len(parts) == 3 and parts[2] == "scores" and self.command == "POST":
            self.package_response(service.handle_resp(service.handle_update_score, line_item_id=number))
        elif len(parts) == 2 and self.command == "GET":
            self.package_response(service.handle_resp(service.handle_get_lineitem, line_item_id=number))
        else:
            self.fail(405, "method not allowed")

    def nrps(self) -> None:
        context_id = urlparse(self.path).path.rsplit("/", 1)[-1]
        platform = Platform()
        service = Roster(self.package_request(), platform, context_id)
        self.package_response(service.handle_resp(service.handle_get_members))

    def deep_link_return(self) -> None:
        form = self.form()
        platform = Platform()
        try:
            items = platform.validate_deeplinking_resp(form)  # signature (tool JWKS), type, items
        except Exception as exc:
            return self.fail(400, f"the package refused the Deep Linking response: {type(exc).__name__} {exc}")
        claims = jwt.decode(form["JWT"], options={"verify_signature": False})
        problems = []
        if claims.get("iss") != CLIENT_ID:
            problems.append("iss is not the client id")
        if claims.get("aud") != STATE.base and STATE.base not in (claims.get("aud") or []):
            problems.append("aud is not the platform")
        if claims.get("https://purl.imsglobal.org/spec/lti/claim/deployment_id") != DEPLOYMENT_ID:
            problems.append("deployment_id is not the deployment")
        if claims.get("https://purl.imsglobal.org/spec/lti/claim/version") != "1.3.0":
            problems.append("version is not 1.3.0")
        if not claims.get("nonce") or not claims.get("exp") or not claims.get("iat"):
            problems.append("nonce, exp or iat missing")
        if problems:
            return self.fail(400, "Deep Linking response: " + "; ".join(problems))
        placed = []
        for item in items:
            entry = dict(item)
            if item.get("lineItem"):
                entry["lineitem_url"] = create_lineitem(dict(item["lineItem"]))["id"]
            placed.append(entry)
        with STATE.lock:
            STATE.deep_link_responses.append({
                "items": placed,
                "data": claims.get("https://purl.imsglobal.org/spec/lti-dl/claim/data"),
                "kid": jwt.get_unverified_header(form["JWT"]).get("kid"),
            })
        self.send(200, {"placed": len(placed)})

    def course(self) -> None:
        """A course page that embeds the tool in an iframe, with the platform's storage frame
        (LTI client-side postMessage storage) beside it, served from the platform's issuer
        origin (where the tool's messages go)."""
        hint = self.query().get("hint", "")
        page = (
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Course</title></head>'
            '<body><h1>Parallel Programming</h1>'
            f'<iframe name="lti_storage" title="storage" src="{html.escape(STATE.base)}/storage-frame"'
            ' width="1" height="1"></iframe>'
            f'<iframe id="tool" name="tool" title="quizd" src="/initiate?hint={html.escape(hint)}"'
            ' width="1100" height="800"></iframe></body></html>'
        )
        self.send(200, page, "text/html")

    def storage_frame(self) -> None:
        """The platform's side of LTI client-side postMessage storage, written from the spec:
        lti.put_data and lti.get_data, values kept per tool origin, answered to that origin."""
        script = """
const kept = new Map();
const log = (entry) => fetch('/storage-log', { method: 'POST', body: JSON.stringify(entry) });
window.addEventListener('message', (e) => {
  const m = e.data;
  if (!m || typeof m !== 'object' || typeof m.subject !== 'string' || typeof m.key !== 'string') return;
  const reply = (body) => e.source.postMessage({ subject: `${m.subject}.response`, message_id: m.message_id, key: m.key, ...body }, e.origin);
  const slot = `${e.origin} ${m.key}`;
  if (m.subject === 'lti.put_data') {
    kept.set(slot, String(m.value));
    log({ op: 'put', origin: e.origin, key: m.key });
    reply({ value: m.value });
  } else if (m.subject === 'lti.get_data') {
    log({ op: 'get', origin: e.origin, key: m.key, found: kept.has(slot) });
    if (kept.has(slot)) reply({ value: kept.get(slot) });
    else reply({ error: { code: 'bad_request', message: 'no value for this key' } });
  }
});
"""
        self.send(200, f"<!DOCTYPE html><html><body><script>{script}</script></body></html>", "text/html")

    def storage_log(self) -> None:
        entry = json.loads(self.body() or b"{}")
        with STATE.lock:
            STATE.storage_log.append(entry)
        self.send(200, {"ok": True})

    def recorded(self) -> None:
        with STATE.lock:
            self.send(200, {
                "scores": STATE.scores,
                "lineitems": STATE.lineitems,
                "deep_link_responses": STATE.deep_link_responses,
                "storage_log": STATE.storage_log,
                "tokens_issued": STATE.tokens_issued,
                "auth_requests": STATE.auth_requests,
                "id_tokens": STATE.id_tokens,
                "errors": STATE.errors,
                "issuer": STATE.base,
                "client_id": CLIENT_ID,
                "deployment_id": DEPLOYMENT_ID,
                "jwks": STATE.jwks(),
            })

    def control(self) -> None:
        ask = json.loads(self.body() or b"{}")
        with STATE.lock:
            if ask.get("rotate_key"):
                STATE.keys = [STATE.keys[-1], new_key_pair()]
            if ask.get("withdraw_previous_keys"):
                STATE.withdrawn.extend(STATE.keys[:-1])
                STATE.keys = STATE.keys[-1:]
            if "fail_scores" in ask:
                STATE.fail_scores = int(ask["fail_scores"])
            if "roster" in ask:
                STATE.roster.update(ask["roster"])
        self.send(200, {"ok": True})


ROUTES = {
    ("GET", "/.well-known/jwks.json"): Handler.jwks,
    ("POST", "/scenarios"): Handler.add_scenario,
    ("GET", "/initiate"): Handler.initiate,
    ("GET", "/auth"): Handler.auth,
    ("POST", "/auth"): Handler.auth,
    ("POST", "/token"): Handler.token,
    ("GET", "/lineitems"): Handler.lineitems,
    ("POST", "/lineitems"): Handler.lineitems,
    ("POST", "/deep_link_return"): Handler.deep_link_return,
    ("GET", "/recorded"): Handler.recorded,
    ("GET", "/course"): Handler.course,
    ("GET", "/storage-frame"): Handler.storage_frame,
    ("POST", "/storage-log"): Handler.storage_log,
    ("POST", "/control"): Handler.control,
}
PREFIX_ROUTES = {
    ("GET", "/lineitems/"): Handler.lineitem,
    ("POST", "/lineitems/"): Handler.lineitem,
    ("GET", "/nrps/"): Handler.nrps,
}


def main() -> None:
    global STATE
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tool", required=True, help="quizd's base URL")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    STATE = State(f"http://127.0.0.1:{port}", args.tool)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"READY {port}", flush=True)
    # Stop when the test that started us goes away (its end of our stdin closes).
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
