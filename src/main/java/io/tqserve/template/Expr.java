package io.tqserve.template;

import java.util.List;

/** Expression nodes of the template AST (Jinja2's nodes.Expr subset chat templates use). */
sealed interface Expr {
    record Const(Object value) implements Expr { }

    record Name(String name) implements Expr { }

    record ListLit(List<Expr> items) implements Expr { }

    record TupleLit(List<Expr> items) implements Expr { }

    record DictLit(List<Expr> keys, List<Expr> values) implements Expr { }

    record GetAttr(Expr obj, String name) implements Expr { }

    record GetItem(Expr obj, Expr key) implements Expr { }

    record Slice(Expr obj, Expr start, Expr stop, Expr step) implements Expr { }

    /** Positional and keyword arguments of a call, filter or test. */
    record Args(List<Expr> positional, List<String> names, List<Expr> values) {
        static final Args NONE = new Args(List.of(), List.of(), List.of());
    }

    record Call(Expr fn, Args args) implements Expr { }

    /** {@code value | name(args)}; value is null in a {@code {% filter %}} block (the block's text is used). */
    record Filter(Expr value, String name, Args args, int line) implements Expr { }

    record Test(Expr value, String name, Args args, boolean negated) implements Expr { }

    record Unary(String op, Expr operand) implements Expr { }

    record Binary(String op, Expr left, Expr right) implements Expr { }

    record And(Expr left, Expr right) implements Expr { }

    record Or(Expr left, Expr right) implements Expr { }

    record Not(Expr operand) implements Expr { }

    /** {@code a < b <= c}: Python's chained comparison. */
    record Compare(Expr first, List<String> ops, List<Expr> rest) implements Expr { }

    record Cond(Expr test, Expr then, Expr otherwise) implements Expr { }

    record Concat(List<Expr> parts) implements Expr { }
}
