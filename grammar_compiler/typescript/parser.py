"""Tokens to the declarations AST, by recursive descent over the data-describing part of TypeScript.

Anything outside that part is refused with its line and column, naming the
construct; function types and methods are refused as what they are,
descriptions of programs rather than of data. Whole statements that describe
programs (functions, classes, variables whose value is computed) and imports
are passed over and set aside with their refusal, which is raised only where
a type uses them: a source file often holds such statements beside the data
types that a request names.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from grammar_compiler.errors import ConstraintError
from grammar_compiler.typescript.classes import read_class
from grammar_compiler.typescript.enum_values import enum_value
from grammar_compiler.typescript.namespaces import qualify_references
from grammar_compiler.typescript.signatures import (
    function_type,
    read_signature,
    type_parameter_names,
)
from grammar_compiler.typescript.syntax import (
    PROGRAM_NOT_DATA,
    ArrayType,
    Conditional,
    Declaration,
    Declarations,
    IndexedAccess,
    Infer,
    Intersection,
    KeyOf,
    Keyword,
    Literal,
    MappedType,
    Member,
    ObjectType,
    ProgramType,
    Reference,
    Signature,
    TemplateType,
    TupleElement,
    TupleType,
    TypeParameter,
    TypeQuery,
    Union,
    Value,
    own_reference,
)
from grammar_compiler.typescript.tokens import Token, describe, tokenize
from grammar_compiler.typescript.values import value_type

MAX_NESTING = 64
"""Nesting of type expressions (parentheses, objects, arrays, generics)."""


def parse_declarations(source: str) -> Declarations:
    """Every declaration in ``source`` by name (raises ``ConstraintError`` at the first
    mistake in a type; a statement set aside raises only where it is used)."""
    return _Parser(tokenize(source)).declarations()


class UnsupportedConstruct(ConstraintError):
    """A construct outside the subset: it stops a declaration from being data,
    not the source from being read (unlike a syntax error)."""


_KEYWORD_TYPES = frozenset(
    {"string", "number", "boolean", "any", "unknown", "object", "undefined", "never"}
)
_NOT_JSON_TYPES = {"bigint": "bigint", "symbol": "symbol", "unique": "unique symbol"}
"""Types of values JSON cannot hold: refused where a value needs one."""
_REFUSED_TYPES = {
    **_NOT_JSON_TYPES,
    "infer": "infer outside a conditional type's 'extends' clause",
}
_PROGRAM_TYPES = {"new": "constructor type", "asserts": "assertion signature"}
_SCOPES = frozenset({"namespace", "module", "global"})
_DEFAULT_EXPORTS = ("interface", "class", "abstract", "function", "async", "enum")
_PROGRAM_STATEMENTS = {
    "class": "class",
    "abstract": "class",
    "function": "function",
    "async": "function",
}
_VARIABLE_KEYWORDS = frozenset({"const", "let", "var"})
_STATEMENT_STARTS = frozenset(
    {"export", "import", "type", "interface", "enum", "declare"}
    | _PROGRAM_STATEMENTS.keys()
    | _SCOPES
    | _VARIABLE_KEYWORDS
)
_TYPE_PARAMETER_MODIFIERS = frozenset({"const", "in", "out"})
_INDEX_KEYWORDS = (Keyword("string"), Keyword("number"))
_WRAPPER_TYPES = {
    "String": Keyword("string"),
    "Number": Keyword("number"),
    "Boolean": Keyword("boolean"),
    "Object": ObjectType(()),
}
"""The object wrappers, which take what their primitive takes (``Object``: what ``{}`` takes)."""
ONE_SOURCE = "this service reads one source text, so declare the type in it"
NOT_JSON = "not JSON-serializable"


def _key_literal(node: Any) -> bool:
    """Whether a constant's type is a literal a member may be named by."""
    return isinstance(node, Literal) and type(node.value) in (str, int)


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.index = 0
        self.depth = 0
        self.in_pattern = 0  # inside a conditional type's 'extends' pattern: infer allowed
        self.scope: list[str] = []  # the namespaces the statements being read are in
        self.this_type: Reference | None = None  # what 'this' is in the interface being read
        self.enum_members: dict[str, dict[str, Any]] = {}  # the enums read so far, for Other.X
        self.constant_keys: dict[str, Any] = {}  # literal consts read so far, for [KEY] and [K.A]
        self.overloaded: set[str] = set()  # functions declared without a body so far

    # -- helpers ---------------------------------------------------------

    @property
    def token(self) -> Token:
        return self.tokens[self.index]

    def peek(self, offset: int = 1) -> Token:
        return self.tokens[min(self.index + offset, len(self.tokens) - 1)]

    def at(self, *texts: str) -> bool:
        return self.token.kind in ("punct", "name") and self.token.text in texts

    def advance(self) -> Token:
        token = self.token
        if token.kind != "end":
            self.index += 1
        return token

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.advance()
            return True
        return False

    def expect(self, text: str, what: str | None = None) -> Token:
        if not self.at(text):
            raise self.error(f"expected {what or repr(text)}, found {describe(self.token)}")
        return self.advance()

    def name(self, what: str) -> Token:
        if self.token.kind != "name":
            raise self.error(f"expected {what}, found {describe(self.token)}")
        return self.advance()

    def error(self, message: str, token: Token | None = None) -> ConstraintError:
        token = token or self.token
        return ConstraintError(message, line=token.line, column=token.column)

    def unsupported(
        self, construct: str, token: Token | None = None, why: str = ""
    ) -> UnsupportedConstruct:
        token = token or self.token
        message = f"unsupported construct '{construct}'" + (f" ({why})" if why else "")
        return UnsupportedConstruct(message, line=token.line, column=token.column)

    def program(self, construct: str, token: Token | None = None) -> UnsupportedConstruct:
        """The refusal of functions, methods, classes and values: no JSON value has their type."""
        return self.unsupported(construct, token, PROGRAM_NOT_DATA)

    def leading_description(self, token: Token, previous: Token | None) -> str | None:
        """The comments right above ``token`` (no blank line between), not after ``previous``."""
        block: list[str] = []
        next_line = token.line
        for comment in reversed(token.comments):
            if comment.end_line < next_line - 1 or (previous and comment.line <= previous.line):
                break
            block.insert(0, comment.text)
            next_line = comment.line
        return "\n".join(t for t in block if t) or None

    def trailing_description(self, last: Token) -> str | None:
        """A comment after ``last`` on the same line (``x: string; // the x``)."""
        texts = [c.text for c in self.token.comments if c.line == last.line]
        return "\n".join(t for t in texts if t) or None

    # -- declarations ----------------------------------------------------

    def declarations(self) -> Declarations:
        found = Declarations({}, {})
        exported_names = self._statements(found, closing=None)
        for token in exported_names:
            if token.text not in found.types and token.text not in found.values:
                raise self.error(f"export of undeclared type {token.text!r}", token)
        if any(declaration.scope for declaration in found.types.values()):
            qualify_references(found.types)
        return found

    def _statements(self, found: Declarations, closing: str | None) -> list[Token]:
        """The statements up to the end, or up to ``closing`` (an ambient block's
        ``}``), added to ``found``; the names exported by ``export { ... }``."""
        exported_names: list[Token] = []
        while self.token.kind != "end" and not (closing and self.at(closing)):
            if self.accept(";"):
                continue
            start = self.token
            description = self.leading_description(start, None)
            self.this_type = None
            if self.accept("export"):
                if self.at("type") and self.peek().text == "{":
                    self.advance()  # export type { A }: the same list
                if self.at("{"):
                    exported_names += self._export_list(found)
                    continue
                if self.at("*"):  # export * from "m": names of another file
                    self._skip_statement()
                    continue
                if self.at("=") or (self.accept("default") and not self.at(*_DEFAULT_EXPORTS)):
                    self._skip_statement()  # export = x, export default <expression>
                    continue
            if self.at("@"):
                self.skip_decorator()
                continue
            if self.token.kind == "string":  # a directive: 'use strict'
                self._skip_statement()
                continue
            if self.at("declare") and self.peek().kind == "name":
                self.advance()  # an ambient declaration is the same declaration
            if self.at("import"):
                self._import(found)
            elif self.token.text in _VARIABLE_KEYWORDS and self.peek().text != "enum":
                self._variable(found)
            elif self.at("class") or (self.at("abstract") and self.peek().text == "class"):
                self._class(found)
            elif self.at("function") or (self.at("async") and self.peek().text == "function"):
                self._function(found)
            elif self.token.text in _PROGRAM_STATEMENTS:
                self._set_aside_program(found)
            elif self.token.text in _SCOPES:
                self._set_aside_scope(found)
            elif self.at("type", "interface", "enum") or self.at("const"):
                self._add_type(found, self._type_declaration(start, description))
            else:  # a statement of the program (main(); app.listen(3000); if ...): no type
                self._skip_statement()
        return exported_names

    def _type_declaration(self, start: Token, description: str | None) -> Declaration:
        """A type, interface or enum; one that uses a construct outside the subset is
        set aside with that refusal, raised only where a type uses it."""
        first = self.index
        try:
            declaration = self._declaration(start)
        except UnsupportedConstruct as refusal:
            name = self._declared_name(first)
            if name is None:
                raise
            self.index = first
            self._skip_statement()
            return Declaration(name.text, "program", name, refusal=refusal)
        declaration.description = declaration.description or description
        return declaration

    def _declared_name(self, first: int) -> Token | None:
        for index in range(first, min(first + 3, len(self.tokens) - 1)):
            if self.tokens[index].text in ("type", "interface", "enum"):
                name = self.tokens[index + 1]
                return name if name.kind == "name" else None
        return None

    def _add_type(self, found: Declarations, declaration: Declaration) -> None:
        if self.scope:
            scope = ".".join(self.scope)
            name = f"{scope}.{declaration.name}"
            declaration = dataclasses.replace(declaration, name=name, scope=scope)
        existing = found.types.get(declaration.name)
        if existing is None:
            found.types[declaration.name] = declaration
            return
        if existing.kind == declaration.kind == "interface":
            found.types[declaration.name] = self._merged_interface(existing, declaration)
            return
        if "program" in (existing.kind, declaration.kind):
            # an interface merged into a class, or augmenting an imported type
            # (declare module "m" { interface Request {...} }): what it adds to
            # is not data here, so the refusal stands
            if declaration.kind == "program":
                found.types[declaration.name] = declaration
            return
        raise self.error(f"duplicate declaration of {declaration.name!r}", declaration.token)

    def _merged_interface(self, first: Declaration, second: Declaration) -> Declaration:
        """Declaration merging: interfaces of one name are one interface with the
        members and bases of all (a ``.d.ts`` file's way of adding to a type).
        TypeScript asks that both declare the same type parameters, and that a
        member declared in both has one type."""
        if [p.name for p in first.parameters] != [p.name for p in second.parameters]:
            raise self.error(
                f"interface {second.name!r} is declared again with other type parameters",
                second.token,
            )
        body: ObjectType = first.body
        for member in second.body.members:
            twin = next((m for m in body.members if m.name == member.name), None)
            if twin is not None and (twin.type, twin.optional) != (member.type, member.optional):
                raise self.error(
                    f"member {member.name!r} of interface {second.name!r} is declared again "
                    "with another type",
                    member.token,
                )
        if body.index is not None and second.body.index is not None:
            raise self.error("duplicate index signature", second.token)
        members = body.members + tuple(
            m for m in second.body.members if all(m.name != own.name for own in body.members)
        )
        index = (
            (body.index, body.index_key)
            if body.index is not None
            else (second.body.index, second.body.index_key)
        )
        return dataclasses.replace(
            first,
            body=ObjectType(members, *index),
            extends=first.extends + second.extends,
            description=first.description or second.description,
        )

    def _add_value(self, found: Declarations, value: Value) -> None:
        self._record_constant_keys(value)
        if self.scope:
            value = dataclasses.replace(value, name=".".join([*self.scope, value.name]))
        if value.name in found.values:
            raise self.error(f"duplicate declaration of variable {value.name!r}", value.token)
        found.values[value.name] = value

    def _record_constant_keys(self, value: Value) -> None:
        """The names a computed member may be written with: a constant's own
        string or number literal (``const KEY = "k"``), and those of an object
        written ``as const`` (``Keys.A``)."""
        if _key_literal(value.type):
            self.constant_keys[value.name] = value.type.value
        if isinstance(value.type, ObjectType):
            for member in value.type.members:
                if _key_literal(member.type):
                    self.constant_keys[f"{value.name}.{member.name}"] = member.type.value

    # -- statements set aside --------------------------------------------

    def _class(self, found: Declarations) -> None:
        """A class that holds data, as the interface of its instances; one with a
        method or a private member (or anything else this reader cannot take) is
        set aside with that refusal."""
        first = self.index
        try:
            declaration, arguments = read_class(self)
        except ConstraintError as refusal:  # also what this reader of classes does not know
            self.index = first
            self._set_aside_program(found, refusal)
            return
        self._add_type(found, declaration)
        self._add_constructor(found, declaration, arguments)

    def _add_constructor(
        self, found: Declarations, declaration: Declaration, arguments: TupleType | None
    ) -> None:
        """The class as a value (``typeof Order``): its constructor, whose result
        is the instance type (``classes``)."""
        qualified = ".".join([*self.scope, declaration.name])
        instance = own_reference(
            dataclasses.replace(declaration.token, text=qualified), declaration.parameters
        )
        own = frozenset(parameter.name for parameter in declaration.parameters)
        signature = None if arguments is None else Signature(arguments, instance, own)
        constructor = ProgramType("constructor type", declaration.token, signature=signature)
        found.values.setdefault(qualified, Value(qualified, declaration.token, type=constructor))

    def _function(self, found: Declarations) -> None:
        """``function f(x: T): R { ... }``, or one declared without a body (an
        overload, or ``declare function``): a variable of a function type, for
        ``ReturnType<typeof f>``. Of overloads, the last before the body is the
        one kept, as TypeScript reads ``typeof f`` in a conditional type."""
        keyword = self.token
        self.accept("async")
        self.expect("function")
        self.accept("*")  # a generator
        if self.token.kind != "name":  # export default function () { ... }
            self._skip_statement()
            return
        name = self.advance()
        first = self.index
        try:
            signature = read_signature(self, type_parameter_names(self), arrow=False)
        except ConstraintError:
            self.index = first
            signature = None
        has_body = self.at("{")
        ended = self.accept(";") or self.token.kind == "end"
        ended = ended or self.token.line > self.tokens[self.index - 1].line
        if has_body or not ended:
            self._skip_statement()
        qualified = ".".join([*self.scope, name.text])
        if has_body and qualified in self.overloaded:
            return
        if not has_body:
            self.overloaded.add(qualified)
        kind = ProgramType("function", keyword, signature=signature)
        found.values[qualified] = Value(qualified, name, type=kind)

    def _set_aside_program(
        self, found: Declarations, refusal: ConstraintError | None = None
    ) -> None:
        """A class this reader cannot take (or an ``async`` expression that is no
        function declaration): its name is kept with the refusal, raised where a
        type uses it (functions are read by ``_function``)."""
        keyword = self.advance()
        construct = _PROGRAM_STATEMENTS[keyword.text]
        refusal = refusal or self.program(construct, keyword)
        if keyword.text in ("abstract", "async"):
            self.advance()
        name = self.token if self.token.kind == "name" else None
        self._skip_statement()
        if name is None:
            return
        if construct == "class":
            self._add_type(found, Declaration(name.text, "program", name, refusal=refusal))
        if name.text not in found.values:
            found.values[name.text] = Value(name.text, name, refusal=refusal)

    def _set_aside_scope(self, found: Declarations) -> None:
        """``namespace A.B { ... }`` (or ``module A``): its declarations are named
        ``A.B.X`` (``namespaces`` resolves the names written inside and out);
        ``declare global { ... }`` and ``declare module "m" { ... }``, whose
        declarations are read as if written outside (a ``.d.ts`` file's way)."""
        if self.at("global") or (self.at("module") and self.peek().kind == "string"):
            self.advance()
            if self.token.kind == "string":
                self.advance()
            if self.accept("{"):
                self._statements(found, closing="}")
                self.expect("}")
            return
        if self.peek().kind != "name":  # module.exports = ...: a statement of a program
            self._skip_statement()
            return
        self.advance()
        path = [self.name("a namespace name").text]
        while self.accept("."):
            path.append(self.name("a namespace name").text)
        if not self.at("{"):  # declare namespace A; and the like
            self._end_statement()
            return
        self.expect("{")
        self.scope += path
        try:
            self._statements(found, closing="}")
        finally:
            del self.scope[-len(path) :]
        self.expect("}")

    def _variable(self, found: Declarations) -> None:
        """``const x = <value>``: its type, for ``typeof x``; a value computed at run
        time is set aside with its refusal."""
        keyword = self.advance()
        name = self.name("a variable name")
        first = self.index
        try:
            written = value_type(self, constant=keyword.text == "const")
            if self.at(","):
                raise self.unsupported("several variables in one declaration", self.token)
            self._end_statement()
        except ConstraintError as error:
            self.index = first
            self._skip_statement()
            self._add_value(found, Value(name.text, name, refusal=error))
            return
        self._add_value(found, Value(name.text, name, type=written))

    def _import(self, found: Declarations) -> None:
        """``import { A, B as C } from "m"`` and the other forms: the names are kept with
        a refusal (this service sees one source text), raised where a type uses them."""
        keyword = self.advance()
        names: list[Token] = []
        if self.at("type") and self.peek().text != "from":
            self.advance()
        if self.token.kind == "name" and self.peek().text == "=":
            self._import_alias(found)
            return
        if self.token.kind == "name" and not self.at("from"):
            names.append(self.advance())
            self.accept(",")
        if self.accept("*"):
            self.expect("as")
            names.append(self.name("a name"))
        elif self.accept("{"):
            while not self.accept("}"):
                if self.at("type") and self.peek().kind == "name" and self.peek().text != "as":
                    self.advance()
                local = self.name("an imported name")
                if self.accept("as"):
                    local = self.name("a name")
                names.append(local)
                if not self.accept(","):
                    self.expect("}", "',' or '}'")
                    break
        if (names and not self.accept("from")) or self.token.kind != "string":
            raise self.unsupported("import", keyword)  # import x = require("m"), ...
        module = self.token
        self.advance()
        self._end_statement()
        for local in names:
            self._add_imported(found, local, module)

    def _add_imported(self, found: Declarations, local: Token, module: Token) -> None:
        refusal = self.error(
            f"{local.text!r} is imported from {module.value!r}: {ONE_SOURCE}", local
        )
        self._add_type(found, Declaration(local.text, "program", local, refusal=refusal))
        found.values.setdefault(local.text, Value(local.text, local, refusal=refusal))

    def _import_alias(self, found: Declarations) -> None:
        """``import Y = N.X`` names a type of a namespace (an alias of it);
        ``import fs = require("fs")`` another file (kept with a refusal)."""
        local = self.advance()
        self.expect("=")
        if self.at("require"):
            self.advance()
            self.expect("(")
            module = self.token
            self.advance()
            self.expect(")")
            self._end_statement()
            self._add_imported(found, local, module)
            return
        target = self._named()
        self._end_statement()
        if not isinstance(target, Reference):
            raise self.error("expected a namespace member after 'import X ='", local)
        self._add_type(found, Declaration(local.text, "type", local, body=target))

    def skip_decorator(self) -> None:
        """``@Name.member(arguments)`` before a class, which is set aside next."""
        self.expect("@")
        self.name("a decorator")
        while self.accept("."):
            self.name("a decorator")
        if self.at("("):
            depth = 0
            while True:
                if self.token.kind == "end":
                    raise self.error("expected ')' to close the decorator's arguments")
                depth += (
                    {"(": 1, ")": -1}.get(self.token.text, 0) if self.token.kind == "punct" else 0
                )
                self.advance()
                if depth == 0:
                    return

    def _skip_statement(self) -> None:
        """Passes over the rest of a statement this reader does not parse: up to a
        ``;`` outside brackets, a line that starts a new statement, or a body's
        closing ``}`` followed by a new statement on the same line (``function
        f() { ... } type T = ...``)."""
        depth = 0
        first = self.index
        while self.token.kind != "end":
            token = self.token
            if token.kind == "punct" and depth == 0 and token.text == ";":
                self.advance()
                return
            starts_line = self.index > first and token.line > self.tokens[self.index - 1].line
            if depth == 0 and starts_line and token.text in _STATEMENT_STARTS:
                return
            if token.kind == "punct" and token.text in "([{":
                depth += 1
            elif token.kind == "punct" and token.text in ")]}":
                if depth == 0 and token.text == "}" and self.index > first:
                    return  # the enclosing block ends the statement (namespace N { f() })
                if depth == 0:
                    raise self.error(f"unexpected {describe(token)}")
                depth -= 1
            self.advance()
            if depth == 0 and token.text == "}" and self.token.text in _STATEMENT_STARTS:
                return

    def _export_list(self, found: Declarations) -> list[Token]:
        """``export { A, B as C }``: the names, which must be declared (``C`` is
        declared here, as an alias of ``B``); ``export { A } from "m"``
        re-exports another file's names, kept with a refusal like an import's."""
        self.expect("{")
        names: list[Token] = []
        aliases: list[tuple[Token, Token]] = []
        while not self.accept("}"):
            if self.at("type") and self.peek().kind == "name" and self.peek().text != "as":
                self.advance()
            name = self.name("a type name")
            if self.accept("as"):
                aliases.append((name, self.name("a name")))
            else:
                names.append(name)
            if not self.accept(","):
                self.expect("}", "',' or '}'")
                break
        if self.accept("from"):
            module = self.token
            if module.kind != "string":
                raise self.error(f"expected a module name, found {describe(module)}")
            self.advance()
            self._end_statement()
            for local in names + [alias for _, alias in aliases]:
                self._add_imported(found, local, module)
            return []
        self.accept(";")
        for original, alias in aliases:
            if alias.text != "default":
                body = Reference(original.text, (), original)
                self._add_type(found, Declaration(alias.text, "type", alias, body=body))
        return names + [original for original, _ in aliases]

    def _declaration(self, start: Token) -> Declaration:
        keyword = self.token
        if self.at("type"):
            return self._type_alias()
        if self.at("interface"):
            return self._interface()
        if self.at("enum"):
            return self._enum()
        if self.at("const") and self.peek().text == "enum":
            self.advance()
            return self._enum()
        raise self.error(
            f"expected a declaration (type, interface or enum), found {describe(keyword)}"
        )

    def _type_alias(self) -> Declaration:
        self.expect("type")
        name = self.name("a type name")
        parameters = self.type_parameters()
        if self.at("{"):  # the documentation's "export type X { ... }"
            body = self._object()
        else:
            self.expect("=", "'=' or '{'")
            body = self.type()
        self._end_statement()
        return Declaration(name.text, "type", name, body=body, parameters=parameters)

    def _interface(self) -> Declaration:
        self.expect("interface")
        name = self.name("an interface name")
        parameters = self.type_parameters()
        self.this_type = own_reference(name, parameters)
        extends: list[Reference] = []
        if self.accept("extends"):
            while True:
                reference = self.primary()
                if not isinstance(reference, Reference):
                    raise self.error("an interface can only extend named types", name)
                extends.append(reference)
                if not self.accept(","):
                    break
        body = self._object()
        return Declaration(
            name.text, "interface", name, body=body, extends=tuple(extends), parameters=parameters
        )

    def _enum(self) -> Declaration:
        self.expect("enum")
        name = self.name("an enum name")
        self.expect("{")
        members: dict[str, Any] = {}
        following: Any = 0
        while not self.accept("}"):
            member = self.token
            if member.kind not in ("name", "string"):
                raise self.error(f"expected an enum member, found {describe(member)}")
            self.advance()
            if self.accept("="):
                value = enum_value(self, name.text, members, self.enum_members)
            elif isinstance(following, int) and not isinstance(following, bool):
                value = following
            else:
                raise self.error("an enum member after a string member needs a value", member)
            if member.value in members:
                raise self.error(f"duplicate enum member {member.value!r}", member)
            members[member.value] = value
            following = value + 1 if isinstance(value, int) else None
            if not self.accept(","):
                self.expect("}", "',' or '}'")
                break
        self.enum_members[name.text] = members
        return Declaration(name.text, "enum", name, members=members)

    def type_parameters(self) -> tuple[TypeParameter, ...]:
        """``<T, U extends V = W>``: the names and defaults (a required one may not follow
        one with a default, as in TypeScript)."""
        if not self.accept("<"):
            return ()
        parameters: list[TypeParameter] = []
        while True:
            while self.token.text in _TYPE_PARAMETER_MODIFIERS and self.peek().kind == "name":
                self.advance()
            token = self.name("a type parameter name")
            if any(p.name == token.text for p in parameters):
                raise self.error(f"duplicate type parameter {token.text!r}", token)
            if self.accept("extends"):
                self._skip_constraint()
            default = self.type() if self.accept("=") else None
            if default is None and parameters and parameters[-1].default is not None:
                raise self.error(
                    f"type parameter {token.text!r} needs a default: it follows one that has one",
                    token,
                )
            parameters.append(TypeParameter(token.text, token, default))
            if not self.accept(","):
                break
            if self.at(">"):  # a trailing comma
                break
        self.expect(">", "',' or '>'")
        return tuple(parameters)

    def _skip_constraint(self) -> None:
        """Passes over ``C`` of ``T extends C``: it limits which arguments a program may
        pass, not the values of the type the arguments make, so it may use what data
        types cannot (``keyof U``, function types)."""
        start, first, depth = self.token, self.index, 0
        while not (depth == 0 and self.at(",", "=", ">")):
            if self.token.kind == "end":
                raise self.error(
                    "expected ',', '=' or '>' after a type parameter's constraint", start
                )
            if self.at("<", "(", "[", "{"):
                depth += 1
            elif self.at(">", ")", "]", "}"):
                depth -= 1
            self.advance()
        if self.index == first:
            raise self.error(f"expected a type, found {describe(self.token)}")

    def _end_statement(self) -> None:
        if self.accept(";") or self.token.kind == "end" or self.at("}"):
            return
        if self.token.line > self.tokens[self.index - 1].line:
            return
        raise self.error(f"expected ';' or a line break, found {describe(self.token)}")

    # -- types -----------------------------------------------------------

    def type(self) -> Any:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"types nest deeper than {MAX_NESTING} levels")
        try:
            result = self._union()
            if self.at("extends") and not self.in_pattern:
                return self._conditional(result)
            return result
        finally:
            self.depth -= 1

    def _conditional(self, check: Any) -> Conditional:
        """``check extends Pattern ? T : F``; ``infer`` is allowed in the pattern, where
        a nested conditional needs parentheses (as in TypeScript)."""
        token = self.expect("extends")
        self.in_pattern += 1
        try:
            pattern = self._union()
        finally:
            self.in_pattern -= 1
        self.expect("?", "'?' of a conditional type")
        when_true = self.type()
        self.expect(":", "':' of a conditional type")
        return Conditional(check, pattern, when_true, self.type(), token)

    def _union(self) -> Any:
        self.accept("|")
        options = [self._intersection()]
        while self.accept("|"):
            options.append(self._intersection())
        return options[0] if len(options) == 1 else Union(tuple(options))

    def _intersection(self) -> Any:
        start = self.token
        self.accept("&")
        parts = [self._postfix()]
        while self.accept("&"):
            parts.append(self._postfix())
        return parts[0] if len(parts) == 1 else Intersection(tuple(parts), start)

    def _postfix(self) -> Any:
        if self.at("keyof"):
            token = self.advance()
            return KeyOf(self._postfix(), token)
        if self.at("readonly"):
            token = self.advance()
            result = self._postfix()
            if not isinstance(result, (ArrayType, TupleType)):
                raise self.error("'readonly' applies only to array and tuple types", token)
            return result
        result = self.primary()
        while self.at("[") and self.token.line == self.tokens[self.index - 1].line:
            bracket = self.advance()
            if self.accept("]"):
                result = ArrayType(result)
                continue
            index = self.type()
            self.expect("]", "']'")
            result = IndexedAccess(result, index, bracket)
        return result

    def primary(self) -> Any:
        token = self.token
        if token.kind == "string":
            self.advance()
            return Literal(token.value)
        if token.kind == "number":
            self.advance()
            return Literal(token.value)
        if token.kind == "bigint" or (self.at("-") and self.peek().kind == "bigint"):
            self.accept("-")
            self.advance()
            return ProgramType("bigint", token, NOT_JSON)
        if token.kind == "template":
            return self._template()
        if self.at("-") and self.peek().kind == "number":
            self.advance()
            return Literal(-self.advance().value)
        if self.at("("):
            return self._parenthesized()
        if self.at("{"):
            return self._object()
        if self.at("["):
            return self._tuple()
        if token.kind == "name":
            return self._named()
        if self.at("<"):  # a generic function type
            return function_type(self, token, "function type")
        raise self.error(f"expected a type, found {describe(token)}")

    def _template(self) -> Any:
        """A template literal type; without placeholders, a string literal."""
        token = self.advance()
        parts: list[Any] = []
        for piece in token.value:
            if isinstance(piece, str):
                if piece:
                    parts.append(piece)
                continue
            placeholder = _Parser(list(piece))
            placeholder.depth, placeholder.in_pattern = self.depth, self.in_pattern
            parts.append(placeholder.type())
            if placeholder.token.kind != "end":
                raise self.error(
                    f"expected '}}', found {describe(placeholder.token)}", placeholder.token
                )
        if all(isinstance(part, str) for part in parts):
            return Literal("".join(parts))
        return TemplateType(tuple(parts), token)

    def _parenthesized(self) -> Any:
        start = self.token
        if self._is_function_type():
            return function_type(self, start, "function type")
        self.advance()
        inner = self.type()
        self.expect(")", "')'")
        return inner

    def returned_type(self) -> Any:
        """A function's or method's return type: ``void`` allowed, a type
        predicate (``x is T``) a boolean, an assertion (``asserts x``) void."""
        if self.accept("asserts"):
            self.name("a parameter name")
            if self.accept("is"):
                self.type()
            return Keyword("void")
        if self.token.kind == "name" and self.peek().text == "is":
            self.advance()
            self.advance()
            self.type()
            return Keyword("boolean")
        return self.type()

    def skip_expression(self) -> None:
        """An initializer or default value: up to a ``;``, ``,`` or ``)`` outside
        brackets, an enclosing ``}``, or a new line outside brackets."""
        depth = 0
        start = self.index
        while self.token.kind != "end":
            token = self.token
            new_line = self.index > start and token.line > self.tokens[self.index - 1].line
            if depth == 0 and (new_line or self.at(";", ",", ")", "}")):
                return
            if token.kind == "punct" and token.text in "([{":
                depth += 1
            elif token.kind == "punct" and token.text in ")]}":
                depth -= 1
            self.advance()

    def skip_balanced(self, openers: str = "([{<") -> None:
        """An opening bracket and all up to its match, counting the brackets of
        ``openers`` (a block of code leaves ``<`` out: there it compares)."""
        closers = "".join({"(": ")", "[": "]", "{": "}", "<": ">"}[o] for o in openers)
        depth = 0
        while True:
            token = self.advance()
            if token.kind == "end":
                raise self.error("expected a closing bracket", token)
            if token.kind == "punct" and token.text in openers:
                depth += 1
            elif token.kind == "punct" and token.text in closers:
                depth -= 1
                if depth == 0:
                    return

    def _is_function_type(self) -> bool:
        """``(`` starts a function type when its matching ``)`` is followed by ``=>``."""
        depth, index = 0, self.index
        while index < len(self.tokens) and self.tokens[index].kind != "end":
            text = self.tokens[index].text
            if text in "([{" and self.tokens[index].kind == "punct":
                depth += 1
            elif text in ")]}" and self.tokens[index].kind == "punct":
                depth -= 1
                if depth == 0:
                    return self.tokens[min(index + 1, len(self.tokens) - 1)].text == "=>"
            index += 1
        return False

    def _named(self) -> Any:
        token = self.advance()
        name = token.text
        if name in ("true", "false"):
            return Literal(name == "true")
        if name == "null":
            return Literal(None)
        if name in _KEYWORD_TYPES:
            return Keyword(name, token)
        if name == "typeof" and self.token.kind == "name":
            variable = self.advance()
            query: Any = TypeQuery(variable.text, variable)
            while self.at(".") and self.peek().kind == "name":  # typeof CONFIG.modes
                dot = self.advance()
                query = IndexedAccess(query, Literal(self.advance().text), dot)
            return query
        if name == "import" and self.at("("):  # import("./m").T: another file's type
            self.skip_balanced()
            while self.accept("."):
                self.name("a type name")
            if self.at("<"):
                self.skip_balanced()
            return ProgramType("import type", token, ONE_SOURCE)
        if name == "this" and self.this_type is not None:
            return self.this_type
        if name in _WRAPPER_TYPES and not self.at("<"):
            return _WRAPPER_TYPES[name]
        if name == "Function" and not self.at("<", "."):  # any function: left out where optional
            return ProgramType("Function", token)
        if name == "typeof":
            raise self.error(f"expected a variable name after typeof, found {describe(self.token)}")
        if name == "infer" and self.in_pattern and self.token.kind == "name":
            inferred = self.advance()
            if self.at("extends") and self.peek().text != "?":
                raise self.unsupported("infer with a constraint ('infer U extends C')")
            return Infer(inferred.text, inferred)
        if name == "void":
            return Keyword(name, token)  # refused where a value of it is asked for
        if name in _NOT_JSON_TYPES:  # left out where optional, like a method
            if name == "unique":
                self.expect("symbol")
            return ProgramType(_NOT_JSON_TYPES[name], token, NOT_JSON)
        if name in _REFUSED_TYPES:
            raise self.unsupported(_REFUSED_TYPES[name], token)
        if name == "new" and self.at("(", "<"):
            return function_type(self, token, "constructor type")
        if name == "abstract" and self.at("new"):
            self.advance()
            return function_type(self, token, "constructor type")
        if name in _PROGRAM_TYPES:
            raise self.program(_PROGRAM_TYPES[name], token)
        if name == "readonly":
            raise self.error("'readonly' applies only to array and tuple types", token)
        member = None
        while self.accept("."):  # Enum.Member, Namespace.Type, Namespace.Enum.Member
            if member is not None:
                name = f"{name}.{member}"
            member = self.name("a member name").text
        arguments: tuple[Any, ...] = ()
        if self.accept("<"):
            self.depth += 1
            args = [self.type()]
            while self.accept(","):
                args.append(self.type())
            self.expect(">", "'>'")
            self.depth -= 1
            arguments = tuple(args)
        return Reference(name, arguments, token, member)

    def _tuple(self) -> TupleType:
        self.expect("[")
        elements: list[TupleElement] = []
        seen_optional = False
        while not self.accept("]"):
            start = self.token
            element = self._tuple_element()
            if element.rest and isinstance(element.type, (Keyword, Literal)):
                raise self.error("a tuple rest element must be an array or tuple type", start)
            if seen_optional and not element.optional and not element.rest:
                raise self.error("a required tuple element cannot follow an optional one", start)
            seen_optional = seen_optional or element.optional
            elements.append(element)
            array_rest = element.rest and isinstance(element.type, ArrayType)
            if array_rest and not self.at("]"):
                raise self.unsupported("rest element before the end of a tuple", start)
            if not self.accept(","):
                self.expect("]", "',' or ']'")
                break
        return TupleType(tuple(elements))

    def _tuple_element(self) -> TupleElement:
        rest = self.accept("...")
        optional_name = False
        if self.token.kind == "name" and self._named_element():
            self.advance()
            optional_name = self.accept("?")
            self.expect(":")
        element_type = self.type()
        optional = optional_name or self.accept("?")
        return TupleElement(element_type, optional, rest)

    def _named_element(self) -> bool:
        """``[x: T]`` or ``[x?: T]``, as opposed to ``[T]`` and ``[T?]``."""
        after = self.peek().text
        return after == ":" or (after == "?" and self.peek(2).text == ":")

    def _object(self) -> ObjectType | MappedType:
        brace = self.expect("{")
        if self._at_mapped_type():
            return self._mapped_type(brace)
        members: list[Member] = []
        index: tuple[Any, str] | None = None
        previous = self.tokens[self.index - 1]
        while not self.at("}"):
            description = self.leading_description(self.token, previous)
            if self.at("readonly") and self.peek().text == "[":
                self.advance()  # readonly [key: string]: T
            is_member = not self.at("[") or self.at_computed_key()
            if is_member:
                members.append(self._member(description))
            else:
                index = self.index_signature(index)
            last = self.tokens[self.index - 1]
            separated = self.accept(";") or self.accept(",")
            if not separated and not self.at("}") and self.token.line == last.line:
                raise self.error(f"expected ';', ',' or a line break, found {describe(self.token)}")
            trailing = self.trailing_description(self.tokens[self.index - 1])
            if trailing and is_member and not members[-1].description:
                members[-1] = dataclasses.replace(members[-1], description=trailing)
            previous = self.tokens[self.index - 1]
            if self.token.kind == "end":
                raise self.error("expected '}'")
        self.expect("}")
        members = [
            m
            for m in members
            if m.type != ProgramType("set accessor", m.token)
            or sum(other.name == m.name for other in members) == 1
        ]
        members = _overloads_merged(members)
        seen: set[str] = set()
        for member in members:
            if member.name in seen:
                raise self.error(f"duplicate member {member.name!r}", member.token)
            seen.add(member.name)
        if index is None:
            return ObjectType(tuple(members))
        return ObjectType(tuple(members), *index)

    def _at_mapped_type(self) -> bool:
        offset = 0
        if self.at("+", "-"):
            offset += 1
        if self.peek(offset).text == "readonly":
            offset += 1
        return (
            self.peek(offset).text == "["
            and self.peek(offset + 1).kind == "name"
            and self.peek(offset + 2).text == "in"
        )

    def _mapped_type(self, brace: Token) -> MappedType:
        """``{ readonly [K in Keys]-?: T }`` (``readonly`` only shapes programs)."""
        if self.accept("+") or self.accept("-"):
            self.expect("readonly")
        self.accept("readonly")
        self.expect("[")
        parameter = self.name("a key name")
        self.expect("in")
        keys = self.type()
        rename = self.type() if self.accept("as") else None
        self.expect("]", "']'")
        optional = None
        if self.at("+", "-"):
            optional = self.advance().text == "+"
            self.expect("?")
        elif self.accept("?"):
            optional = True
        self.expect(":", "':'")
        value = self.type()
        if not (self.accept(";") or self.accept(",")) and not self.at("}"):
            raise self.error(f"expected '}}' after a mapped type, found {describe(self.token)}")
        self.expect("}", "'}' (a mapped type has no other members)")
        return MappedType(parameter.text, keys, value, optional, brace, rename)

    def index_signature(self, existing: Any) -> tuple[Any, str]:
        bracket = self.expect("[")
        if self.token.kind == "name" and self.peek().text == "in":
            raise self.error("a mapped type has no other members", bracket)
        if self.token.kind != "name" or self.peek().text != ":":
            raise self.error("expected an index signature '[key: string]: T'", bracket)
        self.advance()
        self.expect(":")
        key = self.token
        if self.accept("string") or self.accept("number"):
            names: Any = key.text
        else:
            names = self.type()
            written = names.options if isinstance(names, Union) else (names,)
            if not all(isinstance(n, TemplateType) or n in _INDEX_KEYWORDS for n in written):
                raise self.unsupported(
                    "index signature keyed by other than string, number or a template "
                    "literal type (a mapped type takes literal keys)",
                    key,
                )
        self.expect("]")
        self.expect(":")
        value_type = self.type()
        if existing is not None:
            raise self.error("duplicate index signature", bracket)
        return value_type, names

    def at_computed_key(self) -> bool:
        """``[E.A]: T`` or ``["a"]: T``: a member whose name is a constant."""
        after = self.peek()
        return after.kind == "string" or (after.kind == "name" and self.peek(2).text in (".", "]"))

    def computed_key(self) -> str:
        """The name of ``[E.A]`` (an enum member read before) or ``["a"]``."""
        bracket = self.expect("[")
        token = self.token
        if token.kind == "string":
            self.advance()
            name = token.value
        else:
            first = self.name("an enum or constant name").text
            member = self.name("a member name").text if self.accept(".") else None
            values = self.enum_members.get(first, {})
            written = first if member is None else f"{first}.{member}"
            if member is not None and member in values:
                name = str(values[member])
            elif written in self.constant_keys:
                name = str(self.constant_keys[written])
            else:
                raise self.unsupported(
                    "computed member name (give a string literal, or a member of an enum or "
                    "a constant with a string or number literal value declared before)",
                    bracket,
                )
        self.expect("]")
        return name

    def _member(self, description: str | None) -> Member:
        if self.at("readonly") and self.peek().text not in (":", "?", "("):
            self.advance()  # a modifier, not a member named "readonly"
        token = self.token
        if self.at("(", "<"):
            raise self.program("call signature", token)
        accessor = None
        if self.at("get", "set") and self.peek().kind in ("name", "string", "number"):
            accessor = self.advance().text
            token = self.token
        if self.at("["):
            name = self.computed_key()
            optional = self.accept("?")
            self.expect(":", "':'")
            return Member(name, self.type(), optional, description, token)
        if token.kind in ("name", "string"):
            name = token.value
        elif token.kind == "number":
            name = _number_key(token.value)
        else:
            raise self.error(f"expected a member name, found {describe(token)}")
        self.advance()
        optional = self.accept("?")
        if accessor is not None:
            return self._accessor(accessor, name, description, token)
        if self.at("(", "<"):
            if token.text == "new":
                raise self.program("construct signature", token)
            return self._method(name, optional, description, token)
        self.expect(":", "':'")
        return Member(name, self.type(), optional, description, token)

    def _method(self, name: str, optional: bool, description: str | None, token: Token) -> Member:
        """``run(x: T): R``: its signature read, the member kept as a program's part."""
        signature = read_signature(self, type_parameter_names(self), arrow=False)
        method = ProgramType("method signature", token, signature=signature)
        return Member(name, method, optional, description, token)

    def _accessor(self, kind: str, name: str, description: str | None, token: Token) -> Member:
        """``get x(): T`` is the member ``x: T``; ``set x(v: T)`` a program's part
        (an interface with both lists ``x`` twice: the getter's is kept)."""
        self.skip_balanced()
        if kind == "set":
            if self.accept(":"):
                self.returned_type()
            return Member(name, ProgramType("set accessor", token), False, description, token)
        returned = self.type() if self.accept(":") else ProgramType("get accessor", token)
        return Member(name, returned, False, description, token)


def _overloads_merged(members: list[Member]) -> list[Member]:
    """A method's overloads (``on(e: "a"): void; on(e: "b"): void``) as one
    member where the first stands, with the last signature, which is the
    one ``Parameters`` and ``ReturnType`` read."""
    last = {m.name: m for m in members if _is_method(m)}
    merged: list[Member] = []
    for member in members:
        if not _is_method(member):
            merged.append(member)
        elif member.name in last:
            kept = last.pop(member.name)
            described = member.description or kept.description
            merged.append(dataclasses.replace(kept, description=described))
    return merged


def _is_method(member: Member) -> bool:
    return isinstance(member.type, ProgramType) and member.type.construct == "method signature"


def _number_key(value: int | float) -> str:
    return str(value) if isinstance(value, int) else repr(value)
