"""JSON Schema constraints: a user's schema in, the schema xgrammar compiles out.

xgrammar 0.2.8 (``compile_json_schema(value, any_whitespace=False)``,
strict mode) quietly ignores much of JSON Schema, and where it ignores a
keyword it generates JSON the schema rejects. So the schema is not passed
through: it is normalized into a form whose every keyword xgrammar was
probed to enforce, and each keyword that cannot be expressed that way is
refused (``strict=True``) or compiled without and listed in
``not_enforced`` (``strict=False``), with its JSON pointer. A keyword that is
not one of the schema's draft (a typo, a vendor key, another draft's or
OpenAPI's keyword, an unknown ``format``) constrains nothing, for JSON Schema
and for the judge alike: it is dropped and reported as ignored, never
refused. The constraint's ``report`` (``canonical.ConstraintReport``) lists
what was enforced, ignored and not enforced. Generation is always a subset
of what the schema allows (never a superset), checked in the tests by
sampling xgrammar's own output against the judge.

Drafts (``drafts``): draft-04, -06, -07, 2019-09 and 2020-12, each read by
its own rules (draft-04's ``id`` and boolean exclusive bounds, tuple
``items`` before 2020-12, ``$ref`` hiding its siblings before 2019-09, ...);
without ``$schema``, 2020-12 unless an older spelling selects the draft
that reads it.

Enforcement, as probed on xgrammar 0.2.8 and handled here:

=========================== ========= =============================================
keyword                     status    how
=========================== ========= =============================================
type (string or list)       enforced  native
enum, const                 enforced  values filtered by jsonschema against every
                                      sibling keyword (xgrammar ignores siblings
                                      of enum), so siblings are enforced too;
                                      fractional numbers become ranges [v, v]
                                      (xgrammar spells 0.07 0.070000000000000007)
properties, required        enforced  native; a required name missing from
                                      properties is added with the schema that
                                      applies to it (xgrammar ignored it)
additionalProperties        enforced  native (bool or schema); when absent,
                                      xgrammar generates no undeclared property
                                      unless there are no properties at all
patternProperties           partly    declared names matching a pattern get its
                                      schema merged in; undeclared names match
                                      a pattern or, beside additionalProperties,
                                      are free with values fitting every schema
                                      that could apply (none where none fits)
propertyNames               enforced  string keywords, as for strings below
minProperties               partly    only if no undeclared names can be generated
                                      (xgrammar lets them repeat), it is implied,
                                      or it is 1; with ``decoder_guard``, over
                                      names that can always go on too
maxProperties               enforced  native
dependentRequired, -Schemas enforced  as branches: trigger absent, or present with
dependencies                          what it requires (``dependencies``, read
                                      the draft-07 way in every draft); a subset
                                      past the branch budget (names made
                                      required, or the trigger left out)
items, prefixItems          enforced  native; draft-04..2019-09 ``items: [...]``
                                      and ``additionalItems`` become
                                      prefixItems/items
minItems, maxItems          enforced  native (prefixItems cut to maxItems)
uniqueItems                 partly    kept by the decoder for arrays of listed
                                      values, strings that can always go on
                                      (no maxLength; ``regex_emit.
                                      always_extendable``) and a bounded
                                      pattern's strings, listed (at most
                                      1,024: ``^[A-Z]{2}$``) or counted
                                      (``date``, ``uuid``:
                                      ``counted_strings``), strings of
                                      maxLength alone (at most 93 items:
                                      ``MAX_BOUNDED_UNIQUE_ITEMS``), a range's
                                      integers, items of any value or of
                                      several scalar kinds (kept to strings,
                                      integers, booleans, null: a subset),
                                      tuples of booleans, null and such
                                      strings (``_tuple_kept_apart``),
                                      and objects with
                                      a required string member that can
                                      always go on or of maxLength alone
                                      (a subset: items differ
                                      in it or in the members before it), in
                                      a schema given whole
                                      (``decoder_guard=True``); ignored by
                                      xgrammar (fine if maxItems <= 1)
contains, min/maxContains   partly    a subset: the first positions that can
                                      match are made to; past maxContains, items
                                      from the complement of contains
unevaluatedProperties/Items partly    ``false`` closes the merged object/array;
                                      a schema only without composition
minLength, maxLength        enforced  as a pattern: xgrammar's own lets raw
                                      control characters (a tab) in
pattern                     enforced  rewritten (see ``ecma_regex``): search
                                      semantics made explicit, ECMA/Python
                                      differences and JSON escaping handled,
                                      xgrammar's ``(?:a+b)?`` and U+FFFF-spanning
                                      class bugs avoided
pattern/format + lengths    enforced  xgrammar ignores the lengths; folded into
                                      the regex (a subset when several parts vary)
format                      enforced  date, time, date-time, duration, email,
                                      hostname, ipv4, ipv6, uuid, uri,
                                      uri-reference, json-pointer,
                                      relative-json-pointer: own regexes, as
                                      xgrammar's allow 02-31, leading-zero IPv4
                                      octets and raw quotes (json-pointer)
format (numbers)            enforced  int8/16/32/64, uint8/16/32/64, uint (as
                                      uint64), double-int: their range as bounds
                                      (an annotation to the judge: a subset)
format (subsets)            enforced  idn-email as email, iri* as URIs,
                                      idn-hostname as ASCII hostnames without
                                      "--", regex as the regexes both dialects
                                      read alike (``ecma_regex._regex_format``)
format (unknown)            ignored   phone, URI, OpenAPI's float, byte, ...:
                                      annotations (``normalize._format`` is
                                      where other enforced formats go)
minimum, maximum,           enforced  native; integer bounds rounded (xgrammar
exclusiveMinimum/Maximum              refuses 0.5) and clamped to +-2**62;
                                      draft-04's booleans make the bound
                                      exclusive; each distinct range one shared
                                      $defs entry
(no bounds: runaway guard)  subset    integers within +-(2**53-1), numbers also
                                      fractions within +-1e11 with at most 6
                                      decimals, no exponent (17 significant
                                      digits); root ``"x-unbounded-numbers":
                                      true`` lifts it (``numbers``); not on an
                                      unbounded integer multipleOf, nor inside
                                      free values (``{}``)
multipleOf                  partly    integer steps up to 1024, with no bounds or
                                      both bounds under 10000 apart (xgrammar
                                      ignores it otherwise); beside one bound,
                                      the multiples within 10000 of it (a
                                      subset); other bounded ranges
                                      listed as an enum up to 1000 multiples,
                                      or cut into up to 16 ranges xgrammar
                                      steps in (exact);
                                      a larger step with one bound or none:
                                      the 1000 multiples nearest it, listed;
                                      non-integer steps: in a bounded range the
                                      multiples the judge accepts, listed, else
                                      integer multiples (a subset); refused where
                                      float division makes those unsure (0.07)
anyOf                       enforced  native; sibling keywords distributed into
                                      the branches (xgrammar ignored them)
oneOf                       partly    as anyOf when the branches provably exclude
                                      what each other generates (types,
                                      const/enum, a required discriminator
                                      property, disjoint ranges), decided in
                                      linear time for tagged unions
                                      (``exclusive``); else each branch minus the
                                      others (their complements), refused where a
                                      branch would lose all its values to an
                                      inexpressible one
allOf                       partly    merged here (xgrammar ignores it); patterns
                                      and formats that must all hold become one
                                      regex (``regex_automaton``), refused past
                                      its bounds
not                         partly    its schema's complement (``complement``):
                                      exact for type, const/enum of scalars,
                                      required, properties, ranges, lengths...;
                                      a pattern's over printable ASCII, a
                                      format's as what none of its values holds;
                                      a subset otherwise, refused where empty
if, then, else              enforced  as branches (if and then) or (a term of the
                                      if's complement, and else); a subset where
                                      that complement is partly expressible
$ref, $defs, definitions    enforced  local refs (pointers, anchors, embedded
                                      ids, draft-04 ``id``) hoisted into $defs;
                                      recursion kept; remote refs refused but
                                      the official metaschemas'
                                      (``metaschemas``);
                                      siblings merged (2019-09+) or ignored and
                                      reported (draft-04..07 ignore them);
                                      cycles that never produce a value are
                                      refused
$dynamicRef, $recursiveRef  enforced  through the resources passed on the way,
                                      as jsonschema resolves them
                                      (``dynamic_scope``)
contentEncoding,            partly    draft-07 only (a validator may check them;
contentMediaType                      annotations in every other draft): base64,
                                      base32 or base16 alone as a pattern
                                      (``keywords.ENCODED_ALPHABETS``)
annotations                 ignored   title, description, default, examples,
                                      deprecated, readOnly, ..., x-*: not listed
unknown keywords            ignored   constrain nothing per JSON Schema (and for
                                      the judge): typos, vendor keys, other
                                      drafts' and OpenAPI's keywords (nullable
                                      does not allow null), listed as ignored
=========================== ========= =============================================

Known gaps of xgrammar that remain: undeclared property names may be
spelled with escapes (``"\\u0061"``) that decode to a declared name; the
judge catches the result.

Limits: ``MAX_SCHEMA_BYTES``, ``MAX_DEPTH``, ``MAX_ENUM_VALUES``,
``MAX_PROPERTIES`` (``load``), ``MAX_BRANCHES`` branches of one union,
``MAX_PRODUCT_BRANCHES`` of a union distributed into another, and
``MAX_DISTRIBUTED_SUBSCHEMAS`` once sibling keywords are copied into the
branches (``normalize``), ``MAX_REWRITE_BRANCHES`` per rewrite
(``branching``), and no part may need more than
``shortest.MAX_SHORTEST_OUTPUT`` characters (``size``); an object writes at
most ``MAX_OPTIONAL_PROPERTIES`` optional properties, fewer where their
squares summed over all objects would pass ``MAX_OPTIONAL_PROPERTIES_SQUARED``
(a subset, reported).
The judge (``json_judge``) validates the output with ``jsonschema`` against
the original schema.

The stages, one module each: ``load`` (the document and its size limits),
``drafts`` (which draft, its rules, draft-03 leftovers, metaschema check),
``metaschemas`` (the official ones a ``$ref`` names, embedded), ``refs``
(subschemas and the ``$ref`` index), ``dynamic_scope`` (where dynamic
references lead), ``keywords`` (annotation / not-enforceable classes),
``nodes`` (the normalized form), ``normalize`` (schema to nodes, merging),
the rewrites into branches it calls (``complement``: the values a schema
rejects; ``branching``: what the rewrites share; ``conditionals``,
``dependencies``, ``contains``, ``exclusive_one_of``), ``numbers`` (range
formats, non-integer steps, the number guard), ``exclusive`` (whether oneOf
branches exclude each other), ``size`` (output size and optional-property
limits), ``render`` (nodes to xgrammar's schema, confirmed by compiling it).
Every failure leaves as a
``ConstraintError`` naming the construct and its JSON pointer.
"""

from __future__ import annotations

import json

from grammar_compiler import bounded_regex
from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.errors import ConstraintError
from grammar_compiler.json_judge import make_judge
from grammar_compiler.json_schema.draft03 import as_draft_04, declares_draft_03
from grammar_compiler.json_schema.drafts import (
    Draft,
    check_metaschema,
    read_leftovers,
    unknown_metaschema,
)
from grammar_compiler.json_schema.load import (
    MAX_DEPTH,
    MAX_ENUM_VALUES,
    MAX_PROPERTIES,
    MAX_SCHEMA_BYTES,
    check_limits,
    load,
)
from grammar_compiler.json_schema.metaschemas import with_metaschemas
from grammar_compiler.json_schema.nodes import Unmergeable
from grammar_compiler.json_schema.normalize import (
    MAX_BRANCHES,
    MAX_DISTRIBUTED_SUBSCHEMAS,
    MAX_PRODUCT_BRANCHES,
    Compiler,
)
from grammar_compiler.json_schema.pointers import location
from grammar_compiler.json_schema.property_orders import keep_property_orders_apart
from grammar_compiler.json_schema.render import Renderer, confirm_with_xgrammar
from grammar_compiler.json_schema.size import (
    MAX_OPTIONAL_PROPERTIES,
    MAX_OPTIONAL_PROPERTIES_SQUARED,
    check_output_size,
    optional_property_cap,
)

PATTERN_TESTS_BUDGET_S = 2.0
"""How long one compile may spend testing the schema's patterns against the
property names and values it declares (``bounded_regex``): microseconds for
any pattern that does not backtrack catastrophically. The automata of its
lookarounds and exclusions (``regex_automaton``) share it."""

__all__ = [
    "MAX_BRANCHES",
    "MAX_DEPTH",
    "MAX_DISTRIBUTED_SUBSCHEMAS",
    "MAX_ENUM_VALUES",
    "MAX_OPTIONAL_PROPERTIES",
    "MAX_OPTIONAL_PROPERTIES_SQUARED",
    "MAX_PRODUCT_BRANCHES",
    "MAX_PROPERTIES",
    "MAX_SCHEMA_BYTES",
    "compile_json_schema",
]


def compile_json_schema(
    schema: str | dict | bool, *, strict: bool = True, decoder_guard: bool = False
) -> CanonicalConstraint:
    """Validate a JSON Schema and return the schema xgrammar compiles, with its judge.

    Args:
        schema: JSON text or the parsed schema (draft-03, -04, -06, -07,
            2019-09, 2020-12; without ``$schema`` or with one no draft has,
            2020-12 read leniently).
        strict: refuse keywords that cannot be enforced; with False they are
            compiled without and listed in ``not_enforced``. Annotations
            (unknown keywords included) are never refused.
        decoder_guard: the constraint goes to the decoder as a JSON schema
            of its own, whose guard keeps an object's names apart (so
            ``minProperties`` counts distinct names) and a unique array's
            items (``uniqueItems`` of listed values or endless strings:
            ``engine/json_repeats.py``), as does a strict tool's parameters
            (``engine/tool_outline.py``); a schema embedded in a user's
            grammar (Lark's ``%json``) has no such guard.

    Returns:
        The constraint, with its ``report`` (``ConstraintReport``): the
        keywords enforced, ignored as annotations and not enforced.

    Raises:
        ConstraintError: invalid JSON or schema, over a limit, unresolvable or
            remote ``$ref``, no value possible, a union too large to express,
            or (strict) a keyword that cannot be enforced.
    """
    document = load(schema)
    check_limits(document)
    if declares_draft_03(document):
        document = as_draft_04(document)
    draft = Draft.of(document)
    judged = document = read_leftovers(document)
    document = with_metaschemas(document, draft)
    check_metaschema(document, draft.validator_class)
    compiler = Compiler(document, draft, strict, decoder_guard=decoder_guard)
    unknown = unknown_metaschema(document)
    if unknown is not None:
        compiler.ignore("$schema", "", unknown)
    try:
        with bounded_regex.deadline(PATTERN_TESTS_BUDGET_S):
            root = compiler.node(document, "")
            check_output_size(root, compiler.definitions)
            compiler.optional_cap = optional_property_cap(root, compiler.definitions)
            canonical = keep_property_orders_apart(Renderer(compiler).render_document(root))
    except TimeoutError:  # jsonschema filtering listed values by a pattern
        raise ConstraintError(
            f"a pattern of the schema took over {PATTERN_TESTS_BUDGET_S:g} s to test against the "
            "values it lists (it backtracks catastrophically); write it without nested or "
            "overlapping repetition"
        ) from None
    except RecursionError:  # chains of $ref or allOf deeper than Python's stack
        raise ConstraintError("schema nests too deeply through $ref or allOf") from None
    except Unmergeable as problem:  # not inside a merge, which would report it instead
        raise problem.refusal() from None
    except ConstraintError as error:
        if not compiler.subsets or not error.message.startswith("no JSON value satisfies"):
            raise
        # the schema may have values that a subset left out: name the outermost one
        (keyword, where), why = min(compiler.subsets.items(), key=lambda i: i[0][1].count("/"))
        reason = error.message.removeprefix("no JSON value satisfies the schema: ")
        raise ConstraintError(
            f"no JSON value satisfies the schema as it can be enforced: {reason} (keyword "
            f"'{keyword}' at {location(where)} is enforced as a subset: {why})"
        ) from None
    value = json.dumps(canonical, ensure_ascii=False, separators=(",", ":"))
    confirm_with_xgrammar(value)
    return CanonicalConstraint(
        kind="json_schema",
        value=value,
        source_language="json_schema",
        judge=make_judge(judged, draft.validator_class),
        not_enforced=tuple(compiler.not_enforced),
        report=compiler.report(),
    )
