#!/usr/bin/env python3
"""Render the chat-template goldens with Hugging Face transformers' own chat-template code.

Usage (from the repository root):
    pip install --no-index --find-links <wheel dir> jinja2
    pip install --no-index --no-deps <wheel dir>/transformers-5.18.0-py3-none-any.whl
    python3 goldens/templates/generate_expected.py

Rendering goes through transformers.utils.chat_template_utils.render_jinja_template, i.e. the Jinja
environment of _compile_jinja_template (ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True),
the AssistantTracker `generation` tag, loopcontrols, transformers' tojson, raise_exception, strftime_now) and
its render call (messages, tools, documents=None, add_generation_prompt, special tokens and extra kwargs), as
apply_chat_template uses it. Only that module is loaded (its package __init__ pulls in huggingface_hub, which
rendering does not need): its two helper imports are stubbed with what they provide.

strftime_now sees a fixed time (conversations.json "corpus.fixed_now"), as the Java tests inject a fixed clock.

Writes
  goldens/templates/expected/<template>/<case>.txt + expected/index.json  (the model templates, sources/)
  goldens/templates/corpus/expected/<template>.json                      (the corpus, corpus/templates/)
  goldens/templates/expected/semantics.json                              (single-feature templates below)
"""

import importlib.util
import json
import logging
import os
import sys
import types
from datetime import datetime

import jinja2

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

# name -> tokenizer_config.json or .jinja (repository-relative); see README.md for where each came from.
TEMPLATES = {
    "tiny-llama-h128": "models/tiny-llama-h128/tokenizer_config.json",
    "qwen3": "goldens/templates/sources/qwen3/tokenizer_config.json",
    "llama3_1": "goldens/templates/sources/llama3_1/tokenizer_config.json",
    "gemma3": "goldens/templates/sources/gemma3/tokenizer_config.json",
    "features": "goldens/templates/sources/features/chat_template.jinja",
}
CORPUS = os.path.join(HERE, "corpus")

# The special-token attributes transformers puts into the render context (special_tokens_map).
SPECIAL_TOKEN_KEYS = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
                      "mask_token", "additional_special_tokens"]
BARE_TEMPLATE_TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}


# Single-feature templates (operator precedence, tests, scoping, loops, macros, filters, methods, printing),
# rendered with SEMANTICS_MESSAGES; expected/semantics.json holds what Jinja2 printed (or raised).
SEMANTICS = [
    "{{ not x is defined }}|{{ not messages is none }}|{{ not (x is defined) }}",
    "{{ strftime_now is defined }}{{ raise_exception is defined }}{{ range is defined }}{{ nope is defined }}",
    "{{ -2|abs }}|{{ 'a' ~ 'b'|upper }}|{{ 2 + 3 * 4 ** 2 }}|{{ 7 // 2 }}{{ -7 // 2 }}{{ 7 % -3 }}{{ 7 / 2 }}",
    "{{ 1 < 2 < 3 }}{{ 3 > 2 > 2 }}|{{ 'a' in 'abc' and not 'z' in 'abc' }}|{{ 'z' not in ['a'] }}",
    "{{ 1 if x is defined else 2 }}|{{ 'y' if messages else 'n' }}|{{ none ~ '' }}{{ true }}",
    "{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %}|{{ x }}",
    "{% set ns = namespace(x=1) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}",
    "{% if true %}{% set y = 'leaks' %}{% endif %}{{ y }}",
    "{% macro m(a, b='B') %}[{{ a }}{{ b }}{{ caller() if caller is defined else '' }}]{% endmacro %}{{ m(1) }}{% call m(2, b='x') %}c{% endcall %}",
    "{% filter upper %}ab{{ 'c' }}{% endfilter %}|{% set t %}  in  {% endset %}{{ t|trim }}",
    "{% for x in 'abc' %}{{ loop.index0 }}{{ loop.index }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.cycle('+', '-') }},{% endfor %}",
    "{% for a in [1] %}{% for b in 'xy' %}{{ loop.depth }}{{ loop.depth0 }}{{ loop.index }}{% endfor %}{{ loop.index }}{% endfor %}",
    "{% for m in messages if m.role != 'system' %}{{ loop.index }}:{{ m.content }}{% else %}none{% endfor %}",
    "{% for i in range(10) %}{% if i is odd %}{% continue %}{% endif %}{% if i > 6 %}{% break %}{% endif %}{{ i }}{% endfor %}",
    "{{ 'abcdef'[1:4] }}{{ 'abcdef'[::-2] }}{{ [1,2,3,4][-2:] }}{{ messages[-1].content }}",
    "{{ '  Hi There  '.strip() }}|{{ 'a,b'.split(',') }}|{{ 'xhix'.lstrip('x') }}{{ 'xhix'.rstrip('x') }}|{{ 'hello world'.title() }}|{{ 'ab'.startswith('a') }}{{ 'ab'.endswith(('x','b')) }}|{{ 'A'.lower() }}{{ 'a'.upper() }}|{{ 'aXa'.replace('a', 'b') }}",
    "{% set d = {'b': 1, 'a': [1, 2.5, None, True]} %}{{ d.items()|list }}|{{ d.keys()|list }}|{{ d.values()|list }}|{{ d.get('a') }}{{ d.get('z', 'dflt') }}|{{ d['b'] }}{{ d.b }}",
    "{{ {'a': 'é', 'b': [1, 2]}|tojson }}|{{ {'a': 1}|tojson(indent=2) }}|{{ 'x\"y'|tojson }}",
    "{{ [3, 1, 2]|sort|join(',') }}|{{ [1, 1, 2]|unique|list }}|{{ messages|map(attribute='role')|join(' ') }}|{{ messages|selectattr('role', 'equalto', 'user')|list|length }}|{{ messages|rejectattr('role', 'eq', 'user')|map(attribute='content')|first }}",
    "{{ x|default('d') }}{{ ''|default('e', true) }}|{{ '5'|int + 1 }}|{{ 3|string ~ 'x' }}|{{ [1, 2]|last }}{{ [1, 2]|first }}|{{ 'ab'|length }}|{{ {'b': 1, 'a': 2}|dictsort }}|{{ 'a\nb'|indent(2) }}|{{ 'cap it'|capitalize }}",
    "{{ x is undefined }}{{ none is none }}{{ 'a' is string }}{{ 1 is number }}{{ 1.5 is float }}{{ 1 is integer }}{{ true is boolean }}{{ {} is mapping }}{{ [] is iterable }}{{ [] is sequence }}{{ 4 is even }}{{ 3 is odd }}{{ 9 is divisibleby 3 }}{{ 1 is eq 1 }}{{ 'a' is equalto 'a' }}{{ true is true }}{{ false is false }}",
    "{{ (1, 'a') }}{{ [none, true, 1.0, 1e-05, 'q\\'s'] }}{{ {'k': (1,)} }}"
]
SEMANTICS_MESSAGES = [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"},
                      {"role": "user", "content": "U2"}]


def load_chat_template_utils(fixed_now):
    """transformers/utils/chat_template_utils.py of the installed wheel, with a fixed datetime.now()."""
    spec = importlib.util.find_spec("transformers")
    if spec is None:
        sys.exit("transformers is not installed (pip install --no-deps the wheel)")
    path = os.path.join(os.path.dirname(spec.origin), "utils", "chat_template_utils.py")
    pkg = types.ModuleType("transformers")
    pkg.__path__ = [os.path.dirname(spec.origin)]
    utils = types.ModuleType("transformers.utils")
    utils.__path__ = [os.path.dirname(path)]
    log = types.ModuleType("transformers.utils.logging")
    log.get_logger = logging.getLogger
    imports = types.ModuleType("transformers.utils.import_utils")
    imports.is_jinja_available = lambda: True
    imports.is_torch_available = lambda: False
    imports.is_vision_available = lambda: False
    utils.logging = log
    utils.import_utils = imports
    sys.modules.update({"transformers": pkg, "transformers.utils": utils, "transformers.utils.logging": log,
                        "transformers.utils.import_utils": imports})
    module_spec = importlib.util.spec_from_file_location("transformers.utils.chat_template_utils", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)

    class FixedDatetime(datetime):
        @classmethod
        def now(cls, tz=None):
            return fixed_now

    module.datetime = FixedDatetime
    version = "unknown"
    dist = os.path.dirname(spec.origin)
    for entry in os.listdir(os.path.dirname(dist)):
        if entry.startswith("transformers-") and entry.endswith(".dist-info"):
            version = entry[len("transformers-"):-len(".dist-info")]
    return module, version


def token_content(value):
    # tokenizer_config.json may store a special token as a string or as an AddedToken dict.
    if isinstance(value, dict):
        return value.get("content")
    if isinstance(value, list):
        return [token_content(v) for v in value]
    return value


def special_tokens(config):
    out = {}
    for key in SPECIAL_TOKEN_KEYS:
        value = token_content(config.get(key))
        if value is not None and value != []:
            out[key] = value
    return out


def load_config(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        if path.endswith(".jinja"):
            return dict(BARE_TEMPLATE_TOKENS, chat_template=f.read())
        return json.load(f)


def render(ctu, source, tokens, conversation, add_generation_prompt, variables):
    """(text, None) or (None, {"error": message, "error_type": Python exception type})."""
    kwargs = dict(tokens)
    kwargs.update(variables)
    try:
        rendered, _ = ctu.render_jinja_template(conversations=[conversation["messages"]],
                                                tools=conversation.get("tools"), chat_template=source,
                                                add_generation_prompt=add_generation_prompt, **kwargs)
        return rendered[0], None
    except Exception as e:  # what apply_chat_template would raise to its caller
        return None, {"error": str(e), "error_type": type(e).__name__}


def variable_tag(variables):
    return "".join("." + k + "-" + json.dumps(v) for k, v in sorted(variables.items()) if k != "payload")


def case_entry(template, config_path, conversation, agp, variables):
    entry = {"template": template, "config": config_path, "conversation": conversation["name"],
             "messages": conversation["messages"], "add_generation_prompt": agp, "variables": variables}
    if conversation.get("tools") is not None:
        entry["tools"] = conversation["tools"]
    return entry


def model_templates(ctu, spec, conversations):
    cases = []
    for name in TEMPLATES:
        if name == "features":
            continue
        for conv in spec["conversations"]:
            for agp in (False, True):
                cases.append((name, conv, agp, {}))
    for extra in spec["extra_cases"]:
        conv = {"name": extra["conversation"], "messages": extra.get("messages")
                or conversations[extra["conversation"]]["messages"]}
        cases.append((extra["template"], conv, extra["add_generation_prompt"], extra.get("variables", {})))

    index = {"jinja2_version": jinja2.__version__, "python": sys.version.split()[0], "cases": []}
    for name, conv, agp, variables in cases:
        config = load_config(TEMPLATES[name])
        entry = case_entry(name, TEMPLATES[name], conv, agp, variables)
        text, error = render(ctu, config["chat_template"], special_tokens(config), conv, agp, variables)
        if error:
            entry.update(error)
        else:
            file_name = f"{name}/{conv['name']}{variable_tag(variables)}{'.gen' if agp else '.nogen'}.txt"
            path = os.path.join(HERE, "expected", file_name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            entry["expected"] = "expected/" + file_name
        index["cases"].append(entry)
    with open(os.path.join(HERE, "expected", "index.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(index, f, ensure_ascii=False, indent=1)
        f.write("\n")
    return len(index["cases"])


def corpus(ctu, spec, version):
    """One JSON per corpus template: every conversation x add_generation_prompt (x enable_thinking)."""
    out_dir = os.path.join(CORPUS, "expected")
    os.makedirs(out_dir, exist_ok=True)
    thinking = set(spec["corpus"]["thinking_conversations"])
    total = 0
    for file_name in sorted(os.listdir(os.path.join(CORPUS, "templates"))):
        with open(os.path.join(CORPUS, "templates", file_name), encoding="utf-8") as f:
            source = f.read()
        runs = [(conv, agp, {}) for conv in spec["conversations"] for agp in (False, True)]
        if "enable_thinking" in source:
            runs += [(conv, True, {"enable_thinking": value}) for conv in spec["conversations"]
                     if conv["name"] in thinking for value in (True, False)]
        cases = []
        for conv, agp, variables in runs:
            case = {"conversation": conv["name"], "add_generation_prompt": agp, "variables": variables}
            text, error = render(ctu, source, BARE_TEMPLATE_TOKENS, conv, agp, variables)
            case.update(error if error else {"expected": text})
            cases.append(case)
        doc = {"template": "corpus/templates/" + file_name, "special_tokens": BARE_TEMPLATE_TOKENS,
               "transformers": version, "jinja2": jinja2.__version__, "cases": cases}
        with open(os.path.join(out_dir, file_name[:-len(".jinja")] + ".json"), "w", encoding="utf-8",
                  newline="\n") as f:
            json.dump(doc, f, ensure_ascii=False, indent=1)
            f.write("\n")
        total += len(cases)
    return total


def semantics(ctu):
    out = []
    for source in SEMANTICS:
        case = {"template": source}
        text, error = render(ctu, source, {}, {"messages": SEMANTICS_MESSAGES}, False, {})
        case.update(error if error else {"expected": text})
        out.append(case)
    with open(os.path.join(HERE, "expected", "semantics.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump({"messages": SEMANTICS_MESSAGES, "cases": out}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    return len(out)


def main():
    with open(os.path.join(HERE, "conversations.json"), encoding="utf-8") as f:
        spec = json.load(f)
    fixed_now = datetime.fromisoformat(spec["corpus"]["fixed_now"])
    ctu, version = load_chat_template_utils(fixed_now)
    conversations = {c["name"]: c for c in spec["conversations"]}
    n = model_templates(ctu, spec, conversations)
    m = corpus(ctu, spec, version)
    semantics(ctu)
    print(f"{n} model-template cases and {m} corpus cases written with transformers {version}, "
          f"jinja2 {jinja2.__version__}")


if __name__ == "__main__":
    main()
