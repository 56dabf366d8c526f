package io.tqserve.template;

import java.util.List;

/** Statement nodes of the template AST; every node knows its template line for error messages. */
sealed interface Node {
    int line();

    record Text(String text, int line) implements Node { }

    record Output(Expr expr, int line) implements Node { }

    record If(List<Expr> tests, List<List<Node>> bodies, List<Node> otherwise, int line) implements Node { }

    record For(Target target, Expr iter, Expr filter, List<Node> body, List<Node> otherwise, int line)
            implements Node { }

    record Set(Target target, Expr value, int line) implements Node { }

    record SetBlock(Target target, List<Node> body, Expr.Filter filter, int line) implements Node { }

    record Macro(String name, List<String> params, List<Expr> defaults, List<Node> body, int line)
            implements Node { }

    record CallBlock(Expr.Call call, List<String> params, List<Expr> defaults, List<Node> body, int line)
            implements Node { }

    record FilterBlock(Expr.Filter filter, List<Node> body, int line) implements Node { }

    record With(List<Target> targets, List<Expr> values, List<Node> body, int line) implements Node { }

    record Break(int line) implements Node { }

    record Continue(int line) implements Node { }

    /** transformers' {@code {% generation %}} block (assistant-mask tracking): renders its body. */
    record Generation(List<Node> body, int line) implements Node { }

    /** An assignment target: a name, {@code ns.attr}, or a tuple of targets. */
    sealed interface Target {
        record Name(String name) implements Target { }

        record Attr(String name, String attr) implements Target { }

        record Unpack(List<Target> targets) implements Target { }
    }
}
