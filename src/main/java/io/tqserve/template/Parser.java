package io.tqserve.template;

import io.tqserve.template.Lexer.Kind;
import io.tqserve.template.Lexer.Token;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Jinja2's statement grammar over {@link Lexer} tokens: {@code if/elif/else}, {@code for} (with loop filter and
 * {@code else}), {@code set} (expression, block and namespace-attribute forms), {@code macro}, {@code call},
 * {@code filter}, {@code with}, {@code break/continue}, {@code print} and transformers' {@code generation}.
 * Expressions are parsed by {@link ExprParser}.
 */
final class Parser {
    private final List<Token> tokens;
    private int p;
    private final ExprParser expr;

    private Parser(List<Token> tokens) {
        this.tokens = tokens;
        this.expr = new ExprParser(this, unknown);
    }

    static List<Node> parse(String source) {
        Parser parser = new Parser(Lexer.tokenize(source));
        List<Node> body = parser.subparse(Set.of());
        if (parser.peek().kind() != Kind.EOF) {
            Token t = parser.peek();
            throw new TemplateException("Encountered unknown tag '" + t.text() + "'.", t.line());
        }
        return body;
    }

    // ---- token access (shared with ExprParser) ----

    Token peek() {
        return tokens.get(p);
    }

    Token peek(int ahead) {
        return tokens.get(Math.min(p + ahead, tokens.size() - 1));
    }

    Token next() {
        Token t = tokens.get(p);
        if (t.kind() != Kind.EOF) {
            p++;
        }
        return t;
    }

    boolean skipOp(String op) {
        if (peek().isOp(op)) {
            p++;
            return true;
        }
        return false;
    }

    boolean skipName(String name) {
        if (peek().isName(name)) {
            p++;
            return true;
        }
        return false;
    }

    Token expectOp(String op) {
        if (!peek().isOp(op)) {
            throw unexpected("'" + op + "'");
        }
        return next();
    }

    String expectName() {
        if (peek().kind() != Kind.NAME) {
            throw unexpected("a name");
        }
        return next().text();
    }

    void expectName(String name) {
        if (!peek().isName(name)) {
            throw unexpected("'" + name + "'");
        }
        next();
    }

    TemplateException unexpected(String expected) {
        Token t = peek();
        String got = switch (t.kind()) {
            case EOF -> "end of template";
            case BLOCK_END -> "end of statement block";
            case VAR_END -> "end of print statement";
            default -> "'" + t.text() + "'";
        };
        return new TemplateException("expected " + expected + ", got " + got, t.line());
    }

    private void expectBlockEnd() {
        if (peek().kind() != Kind.BLOCK_END) {
            throw unexpected("end of statement block");
        }
        next();
    }

    // ---- expressions, with Jinja2's compile-time check for unknown filters and tests ----

    /** Inside an {@code if} (Jinja2's "soft frame"): an unknown filter/test fails only when evaluated. */
    private boolean soft;
    /** Unknown filters/tests of the expression being parsed: "filter 'x'" with its line. */
    final List<Object[]> unknown = new ArrayList<>();

    private <T> T checked(T e) {
        if (!unknown.isEmpty() && !soft) {
            Object[] first = unknown.getFirst();
            unknown.clear();
            throw new TemplateException("No " + first[0] + " named '" + first[1] + "'.", (Integer) first[2]);
        }
        unknown.clear();
        return e;
    }

    private Expr tuple(boolean withCondexpr, Set<String> extraEnd, boolean simplified) {
        return checked(expr.tuple(withCondexpr, extraEnd, simplified));
    }

    private Expr expression(boolean withCondexpr) {
        return checked(expr.expression(withCondexpr));
    }

    private Expr.Filter filterChain(boolean startInline) {
        return checked(expr.filterChain(startInline));
    }

    private List<Node> softBlock(Set<String> endTags, boolean soft) {
        boolean outer = this.soft;
        this.soft = soft;
        try {
            return block(endTags);
        } finally {
            this.soft = outer;
        }
    }

    // ---- statements ----

    /** Nodes until a block tag whose name is in {@code endTags} (left as the next token) or the end. */
    private List<Node> subparse(Set<String> endTags) {
        List<Node> body = new ArrayList<>();
        while (true) {
            Token t = next();
            switch (t.kind()) {
                case EOF -> {
                    if (!endTags.isEmpty()) {
                        throw new TemplateException("Unexpected end of template. Jinja was looking for the following"
                                + " tags: " + String.join(" or ", endTags.stream().map(s -> "'" + s + "'").sorted()
                                .toList()) + ".", t.line());
                    }
                    return body;
                }
                case TEXT -> body.add(new Node.Text(t.text(), t.line()));
                case VAR_BEGIN -> {
                    Expr e = tuple(true, Set.of(), false);
                    if (peek().kind() != Kind.VAR_END) {
                        throw unexpected("end of print statement");
                    }
                    next();
                    body.add(new Node.Output(e, t.line()));
                }
                case BLOCK_BEGIN -> {
                    Token name = peek();
                    if (name.kind() == Kind.NAME && endTags.contains(name.text())) {
                        return body;
                    }
                    body.add(statement());
                }
                default -> throw new TemplateException("unexpected '" + t.text() + "'", t.line());
            }
        }
    }

    private List<Node> block(Set<String> endTags) {
        expectBlockEnd();
        return subparse(endTags);
    }

    private void end(String tag) {
        expectName(tag);
        expectBlockEnd();
    }

    private Node statement() {
        Token t = peek();
        if (t.kind() != Kind.NAME) {
            throw new TemplateException("tag name expected", t.line());
        }
        int line = t.line();
        next();
        return switch (t.text()) {
            case "if" -> ifStatement(line);
            case "for" -> forStatement(line);
            case "set" -> setStatement(line);
            case "macro" -> macro(line);
            case "call" -> callBlock(line);
            case "filter" -> filterBlock(line);
            case "with" -> with(line);
            case "print" -> {
                Expr e = tuple(true, Set.of(), false);
                expectBlockEnd();
                yield new Node.Output(e, line);
            }
            case "break" -> {
                expectBlockEnd();
                yield new Node.Break(line);
            }
            case "continue" -> {
                expectBlockEnd();
                yield new Node.Continue(line);
            }
            case "generation" -> {
                List<Node> body = block(Set.of("endgeneration"));
                end("endgeneration");
                yield new Node.Generation(body, line);
            }
            default -> throw new TemplateException("Encountered unknown tag '" + t.text() + "'.", line);
        };
    }

    private Node ifStatement(int line) {
        List<Expr> tests = new ArrayList<>();
        List<List<Node>> bodies = new ArrayList<>();
        List<Node> otherwise = List.of();
        boolean outer = soft;
        soft = true;
        tests.add(tuple(false, Set.of(), false));
        soft = outer;
        bodies.add(softBlock(Set.of("elif", "else", "endif"), true));
        while (true) {
            String tag = next().text();
            if (tag.equals("elif")) {
                soft = true;
                tests.add(tuple(false, Set.of(), false));
                soft = outer;
                bodies.add(softBlock(Set.of("elif", "else", "endif"), true));
            } else if (tag.equals("else")) {
                otherwise = softBlock(Set.of("endif"), true);
                end("endif");
                break;
            } else {
                expectBlockEnd();
                break;
            }
        }
        return new Node.If(tests, bodies, otherwise, line);
    }

    private Node forStatement(int line) {
        Node.Target target = target(false, Set.of("in"));
        expectName("in");
        Expr iter = tuple(false, Set.of("recursive"), false);
        Expr filter = null;
        boolean outer = soft;
        soft = false;
        if (skipName("if")) {
            filter = expression(true);
        }
        soft = outer;
        if (peek().isName("recursive")) {
            throw new TemplateException("recursive for loops are not supported by tqserve's template engine", line);
        }
        List<Node> body = softBlock(Set.of("endfor", "else"), false);
        List<Node> otherwise = List.of();
        if (next().text().equals("else")) {
            otherwise = softBlock(Set.of("endfor"), false);
            end("endfor");
        } else {
            expectBlockEnd();
        }
        return new Node.For(target, iter, filter, body, otherwise, line);
    }

    private Node setStatement(int line) {
        Node.Target target = target(true, Set.of());
        if (skipOp("=")) {
            Expr value = tuple(true, Set.of(), false);
            expectBlockEnd();
            return new Node.Set(target, value, line);
        }
        Expr.Filter filter = peek().isOp("|") ? filterChain(false) : null;
        List<Node> body = block(Set.of("endset"));
        end("endset");
        return new Node.SetBlock(target, body, filter, line);
    }

    private Node macro(int line) {
        String name = expectName();
        List<String> params = new ArrayList<>();
        List<Expr> defaults = new ArrayList<>();
        signature(params, defaults);
        List<Node> body = softBlock(Set.of("endmacro"), false);
        end("endmacro");
        return new Node.Macro(name, params, defaults, body, line);
    }

    private void signature(List<String> params, List<Expr> defaults) {
        expectOp("(");
        while (!peek().isOp(")")) {
            if (!params.isEmpty()) {
                expectOp(",");
            }
            params.add(expectName());
            if (skipOp("=")) {
                defaults.add(expression(true));
            } else if (!defaults.isEmpty()) {
                throw new TemplateException("non-default argument follows default argument", peek().line());
            }
        }
        expectOp(")");
    }

    private Node callBlock(int line) {
        List<String> params = new ArrayList<>();
        List<Expr> defaults = new ArrayList<>();
        if (peek().isOp("(")) {
            signature(params, defaults);
        }
        Expr call = expression(true);
        if (!(call instanceof Expr.Call c)) {
            throw new TemplateException("expected call", line);
        }
        List<Node> body = softBlock(Set.of("endcall"), false);
        end("endcall");
        return new Node.CallBlock(c, params, defaults, body, line);
    }

    private Node filterBlock(int line) {
        Expr.Filter filter = filterChain(true);
        List<Node> body = block(Set.of("endfilter"));
        end("endfilter");
        return new Node.FilterBlock(filter, body, line);
    }

    private Node with(int line) {
        List<Node.Target> targets = new ArrayList<>();
        List<Expr> values = new ArrayList<>();
        while (peek().kind() != Kind.BLOCK_END) {
            if (!targets.isEmpty()) {
                expectOp(",");
            }
            targets.add(target(false, Set.of()));
            expectOp("=");
            values.add(expression(true));
        }
        List<Node> body = block(Set.of("endwith"));
        end("endwith");
        return new Node.With(targets, values, body, line);
    }

    /** An assignment target: {@code x}, {@code a, b}, {@code (a, b)}, or (for set) {@code ns.attr}. */
    private Node.Target target(boolean withNamespace, Set<String> endNames) {
        if (withNamespace && peek().kind() == Kind.NAME && peek(1).isOp(".") && peek(2).kind() == Kind.NAME) {
            String ns = next().text();
            next();
            return new Node.Target.Attr(ns, next().text());
        }
        Expr e = tuple(false, endNames, true);
        return toTarget(e);
    }

    private Node.Target toTarget(Expr e) {
        if (e instanceof Expr.Name n) {
            return new Node.Target.Name(n.name());
        }
        if (e instanceof Expr.TupleLit t) {
            List<Node.Target> parts = new ArrayList<>();
            t.items().forEach(i -> parts.add(toTarget(i)));
            return new Node.Target.Unpack(parts);
        }
        throw new TemplateException("can't assign to " + e.getClass().getSimpleName(), peek().line());
    }
}
