"""Keyword classes: annotations (never constrain), keywords the decoder cannot enforce, composition.

The full table of what is enforced and how is in the package docstring
(``grammar_compiler.json_schema``).
"""

ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$anchor",
        "$defs",
        "definitions",
        "$comment",
        "$vocabulary",
        "$dynamicAnchor",
        "$recursiveAnchor",
        "title",
        "description",
        "default",
        "examples",
        "example",
        "deprecated",
        "readOnly",
        "writeOnly",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
        "discriminator",
        "xml",
        "externalDocs",
        "then",  # read with "if" (``conditionals``); alone they do nothing
        "else",
        "minContains",  # read with "contains" (``contains``)
        "maxContains",
    }
)
NOT_ENFORCEABLE = {
    "$dynamicRef": "dynamic references are not supported",
    "$recursiveRef": "recursive references are not supported; use $ref",
}
COMPOSITION = ("allOf", "anyOf", "oneOf", "$ref", "not", "if", "dependentSchemas")
