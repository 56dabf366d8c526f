package io.tqserve.template;

import io.tqserve.template.Lexer.Kind;
import io.tqserve.template.Lexer.Token;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Jinja2's expression grammar with its precedence, lowest first: conditional {@code a if c else b}, {@code or},
 * {@code and}, {@code not}, comparisons ({@code == != < <= > >= in, not in}, chained), {@code + -}, {@code ~},
 * {@code * / // %}, {@code **}, unary {@code - +}, then primaries with their postfix ({@code .attr}, {@code [i]},
 * {@code [a:b:c]}, calls) and filters ({@code |f}) and tests ({@code is t}). Because filters and tests bind to
 * the unary expression, {@code not x is defined} is {@code not (x is defined)} as in Python's Jinja2.
 */
final class ExprParser {
    private static final Set<String> COMPARE = Set.of("==", "!=", "<", "<=", ">", ">=");

    private final Parser in;
    private final List<Object[]> unknown;

    ExprParser(Parser in, List<Object[]> unknown) {
        this.in = in;
        this.unknown = unknown;
    }

    /** Jinja2's parse_tuple: one expression, or a tuple when commas follow. */
    Expr tuple(boolean withCondexpr, Set<String> extraEnd, boolean simplified) {
        List<Expr> items = new ArrayList<>();
        boolean comma = false;
        while (true) {
            if (!items.isEmpty()) {
                if (!in.skipOp(",")) {
                    break;
                }
                comma = true;
            }
            if (tupleEnd(extraEnd)) {
                break;
            }
            items.add(simplified ? primary() : expression(withCondexpr));
        }
        if (!comma) {
            if (items.isEmpty()) {
                throw in.unexpected("an expression");
            }
            return items.getFirst();
        }
        return new Expr.TupleLit(items);
    }

    private boolean tupleEnd(Set<String> extraEnd) {
        Token t = in.peek();
        return t.kind() == Kind.VAR_END || t.kind() == Kind.BLOCK_END || t.kind() == Kind.EOF || t.isOp(")")
                || (t.kind() == Kind.NAME && extraEnd.contains(t.text()));
    }

    Expr expression(boolean withCondexpr) {
        return withCondexpr ? condexpr() : or();
    }

    private Expr condexpr() {
        int pending = unknown.size();
        Expr e = or();
        while (in.skipName("if")) {
            // a conditional expression is a soft frame in Jinja2: its unknown filters fail only when used
            while (unknown.size() > pending) {
                unknown.removeLast();
            }
            Expr test = or();
            Expr otherwise = in.skipName("else") ? condexpr() : null;
            e = new Expr.Cond(test, e, otherwise);
            while (unknown.size() > pending) {
                unknown.removeLast();
            }
        }
        return e;
    }

    private Expr or() {
        Expr e = and();
        while (in.skipName("or")) {
            e = new Expr.Or(e, and());
        }
        return e;
    }

    private Expr and() {
        Expr e = not();
        while (in.skipName("and")) {
            e = new Expr.And(e, not());
        }
        return e;
    }

    private Expr not() {
        if (in.skipName("not")) {
            return new Expr.Not(not());
        }
        return compare();
    }

    private Expr compare() {
        Expr first = math1();
        List<String> ops = new ArrayList<>();
        List<Expr> rest = new ArrayList<>();
        while (true) {
            Token t = in.peek();
            if (t.kind() == Kind.OP && COMPARE.contains(t.text())) {
                in.next();
                ops.add(t.text());
            } else if (t.isName("in")) {
                in.next();
                ops.add("in");
            } else if (t.isName("not") && in.peek(1).isName("in")) {
                in.next();
                in.next();
                ops.add("notin");
            } else {
                break;
            }
            rest.add(math1());
        }
        return ops.isEmpty() ? first : new Expr.Compare(first, ops, rest);
    }

    private Expr math1() {
        Expr e = concat();
        while (in.peek().isOp("+") || in.peek().isOp("-")) {
            String op = in.next().text();
            e = new Expr.Binary(op, e, concat());
        }
        return e;
    }

    private Expr concat() {
        List<Expr> parts = new ArrayList<>();
        parts.add(math2());
        while (in.skipOp("~")) {
            parts.add(math2());
        }
        return parts.size() == 1 ? parts.getFirst() : new Expr.Concat(parts);
    }

    private Expr math2() {
        Expr e = pow();
        while (in.peek().isOp("*") || in.peek().isOp("/") || in.peek().isOp("//") || in.peek().isOp("%")) {
            String op = in.next().text();
            e = new Expr.Binary(op, e, pow());
        }
        return e;
    }

    private Expr pow() {
        Expr e = unary(true);
        while (in.skipOp("**")) {
            e = new Expr.Binary("**", e, unary(true));
        }
        return e;
    }

    private Expr unary(boolean withFilter) {
        Expr e;
        if (in.skipOp("-")) {
            e = new Expr.Unary("-", unary(false));
        } else if (in.skipOp("+")) {
            e = new Expr.Unary("+", unary(false));
        } else {
            e = primary();
        }
        e = postfix(e);
        return withFilter ? filterExpr(e) : e;
    }

    Expr primary() {
        Token t = in.next();
        switch (t.kind()) {
            case NAME -> {
                return switch (t.text()) {
                    case "true", "True" -> new Expr.Const(Boolean.TRUE);
                    case "false", "False" -> new Expr.Const(Boolean.FALSE);
                    case "none", "None" -> new Expr.Const(null);
                    default -> new Expr.Name(t.text());
                };
            }
            case STRING -> {
                StringBuilder b = new StringBuilder((String) t.value());
                while (in.peek().kind() == Kind.STRING) {
                    b.append((String) in.next().value());
                }
                return new Expr.Const(b.toString());
            }
            case INT, FLOAT -> {
                return new Expr.Const(t.value());
            }
            case OP -> {
                switch (t.text()) {
                    case "(" -> {
                        if (in.skipOp(")")) {
                            return new Expr.TupleLit(List.of());
                        }
                        Expr e = tuple(true, Set.of(), false);
                        in.expectOp(")");
                        return e;
                    }
                    case "[" -> {
                        List<Expr> items = new ArrayList<>();
                        while (!in.peek().isOp("]")) {
                            if (!items.isEmpty()) {
                                in.expectOp(",");
                                if (in.peek().isOp("]")) {
                                    break;
                                }
                            }
                            items.add(expression(true));
                        }
                        in.expectOp("]");
                        return new Expr.ListLit(items);
                    }
                    case "{" -> {
                        List<Expr> keys = new ArrayList<>();
                        List<Expr> values = new ArrayList<>();
                        while (!in.peek().isOp("}")) {
                            if (!keys.isEmpty()) {
                                in.expectOp(",");
                                if (in.peek().isOp("}")) {
                                    break;
                                }
                            }
                            keys.add(expression(true));
                            in.expectOp(":");
                            values.add(expression(true));
                        }
                        in.expectOp("}");
                        return new Expr.DictLit(keys, values);
                    }
                    default -> { }
                }
            }
            default -> { }
        }
        throw new TemplateException("unexpected '" + (t.kind() == Kind.EOF ? "end of template" : t.text()) + "'",
                t.line());
    }

    private Expr postfix(Expr e) {
        while (true) {
            Token t = in.peek();
            if (t.isOp(".")) {
                in.next();
                Token name = in.next();
                if (name.kind() == Kind.NAME) {
                    e = new Expr.GetAttr(e, name.text());
                } else if (name.kind() == Kind.INT) {
                    e = new Expr.GetItem(e, new Expr.Const(name.value()));
                } else {
                    throw new TemplateException("expected name or number", name.line());
                }
            } else if (t.isOp("[")) {
                in.next();
                e = subscript(e);
            } else if (t.isOp("(")) {
                e = new Expr.Call(e, callArgs());
            } else {
                return e;
            }
        }
    }

    private Expr subscript(Expr obj) {
        Expr[] parts = new Expr[3];
        boolean slice = false;
        int i = 0;
        if (!in.peek().isOp(":")) {
            parts[0] = expression(true);
        }
        while (in.skipOp(":")) {
            slice = true;
            i++;
            if (i > 2) {
                throw in.unexpected("']'");
            }
            if (!in.peek().isOp(":") && !in.peek().isOp("]")) {
                parts[i] = expression(true);
            }
        }
        if (!slice && in.peek().isOp(",")) {
            List<Expr> items = new ArrayList<>(List.of(parts[0]));
            while (in.skipOp(",") && !in.peek().isOp("]")) {
                items.add(expression(true));
            }
            in.expectOp("]");
            return new Expr.GetItem(obj, new Expr.TupleLit(items));
        }
        in.expectOp("]");
        return slice ? new Expr.Slice(obj, parts[0], parts[1], parts[2]) : new Expr.GetItem(obj, parts[0]);
    }

    private Expr.Args callArgs() {
        in.expectOp("(");
        List<Expr> positional = new ArrayList<>();
        List<String> names = new ArrayList<>();
        List<Expr> values = new ArrayList<>();
        boolean first = true;
        while (!in.peek().isOp(")")) {
            if (!first) {
                in.expectOp(",");
                if (in.peek().isOp(")")) {
                    break;
                }
            }
            first = false;
            if (in.peek().isOp("*") || in.peek().isOp("**")) {
                throw new TemplateException("*args and **kwargs in calls are not supported", in.peek().line());
            }
            if (in.peek().kind() == Kind.NAME && in.peek(1).isOp("=")) {
                names.add(in.next().text());
                in.next();
                values.add(expression(true));
            } else {
                if (!names.isEmpty()) {
                    throw new TemplateException("Invalid argument syntax", in.peek().line());
                }
                positional.add(expression(true));
            }
        }
        in.expectOp(")");
        return new Expr.Args(positional, names, values);
    }

    private Expr filterExpr(Expr e) {
        while (true) {
            Token t = in.peek();
            if (t.isOp("|")) {
                e = filterChain(e, false);
            } else if (t.isName("is")) {
                in.next();
                e = test(e);
            } else if (t.isOp("(")) {
                e = new Expr.Call(e, callArgs());
            } else {
                return e;
            }
        }
    }

    /** The filters of a {@code {% filter %}} (startInline) or {@code {% set x | f %}} block, innermost value null. */
    Expr.Filter filterChain(boolean startInline) {
        return (Expr.Filter) filterChain(null, startInline);
    }

    private Expr filterChain(Expr value, boolean startInline) {
        Expr e = value;
        boolean first = true;
        while (in.peek().isOp("|") || (startInline && first)) {
            if (!(startInline && first)) {
                in.next();
            }
            first = false;
            Token nameToken = in.peek();
            String name = in.expectName();
            while (in.peek().isOp(".") && in.peek(1).kind() == Kind.NAME) {
                in.next();
                name = name + "." + in.next().text();
            }
            if (!Filters.exists(name)) {
                unknown.add(new Object[] {"filter", name, nameToken.line()});
            }
            Expr.Args args = in.peek().isOp("(") ? callArgs() : Expr.Args.NONE;
            e = new Expr.Filter(e, name, args, nameToken.line());
        }
        return e;
    }

    private Expr test(Expr value) {
        boolean negated = in.skipName("not");
        Token nameToken = in.peek();
        String name = in.expectName();
        while (in.peek().isOp(".") && in.peek(1).kind() == Kind.NAME) {
            in.next();
            name = name + "." + in.next().text();
        }
        if (!Tests.exists(name)) {
            unknown.add(new Object[] {"test", name, nameToken.line()});
        }
        Expr.Args args = Expr.Args.NONE;
        Token t = in.peek();
        if (t.isOp("(")) {
            args = callArgs();
        } else if ((t.kind() == Kind.NAME || t.kind() == Kind.STRING || t.kind() == Kind.INT
                || t.kind() == Kind.FLOAT || t.isOp("[") || t.isOp("{"))
                && !(t.isName("else") || t.isName("or") || t.isName("and"))) {
            if (t.isName("is")) {
                throw new TemplateException("You cannot chain multiple tests with is", t.line());
            }
            Expr arg = postfix(primary());
            args = new Expr.Args(List.of(arg), List.of(), List.of());
        }
        return new Expr.Test(value, name, args, negated);
    }
}
