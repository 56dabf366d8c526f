package io.tqserve.template;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Executes the statement nodes of a compiled template into a string. One instance per render call (it holds the
 * render's clock only); errors become a {@link TemplateException} naming the template line.
 */
final class Renderer {
    private static final RuntimeException BREAK = new LoopControl("break");
    private static final RuntimeException CONTINUE = new LoopControl("continue");

    /** {@code break}/{@code continue} unwinding to the enclosing loop (no stack trace). */
    private static final class LoopControl extends RuntimeException {
        private static final long serialVersionUID = 1L;

        LoopControl(String name) {
            super(name, null, false, false);
        }
    }

    final Evaluator eval = new Evaluator(this);

    void render(List<Node> nodes, Scope scope, StringBuilder out) {
        for (Node node : nodes) {
            try {
                execute(node, scope, out);
            } catch (RenderException e) {
                throw TemplateException.at(e, node.line());
            }
        }
    }

    private void execute(Node node, Scope scope, StringBuilder out) {
        switch (node) {
            case Node.Text t -> out.append(t.text());
            case Node.Output o -> out.append(Py.str(eval.eval(o.expr(), scope)));
            case Node.If i -> {
                for (int k = 0; k < i.tests().size(); k++) {
                    if (Py.truthy(eval.eval(i.tests().get(k), scope))) {
                        render(i.bodies().get(k), scope, out);
                        return;
                    }
                }
                render(i.otherwise(), scope, out);
            }
            case Node.For f -> forLoop(f, scope, out);
            case Node.Set s -> assign(s.target(), eval.eval(s.value(), scope), scope);
            case Node.SetBlock s -> {
                StringBuilder body = new StringBuilder();
                render(s.body(), new Scope(scope), body);
                Object value = s.filter() == null ? body.toString() : eval.applyFilter(s.filter(), body.toString(),
                        scope);
                assign(s.target(), value, scope);
            }
            case Node.Macro m -> scope.set(m.name(), new Macro(m, scope, this, null));
            case Node.CallBlock c -> {
                Macro caller = new Macro(new Node.Macro("caller", c.params(), c.defaults(), c.body(), c.line()),
                        scope, this, null);
                out.append(Py.str(eval.call(c.call(), scope, caller)));
            }
            case Node.FilterBlock f -> {
                StringBuilder body = new StringBuilder();
                render(f.body(), scope, body);
                out.append(Py.str(eval.applyFilter(f.filter(), body.toString(), scope)));
            }
            case Node.With w -> {
                Scope inner = new Scope(scope);
                List<Object> values = new ArrayList<>();
                w.values().forEach(v -> values.add(eval.eval(v, scope)));
                for (int k = 0; k < values.size(); k++) {
                    assign(w.targets().get(k), values.get(k), inner);
                }
                render(w.body(), inner, out);
            }
            case Node.Break b -> throw BREAK;
            case Node.Continue c -> throw CONTINUE;
            case Node.Generation g -> render(g.body(), scope, out);
        }
    }

    private void forLoop(Node.For f, Scope scope, StringBuilder out) {
        Object iterable = eval.eval(f.iter(), scope);
        List<Object> items = Py.iterate(iterable);
        if (f.filter() != null) {
            List<Object> kept = new ArrayList<>();
            for (Object item : items) {
                Scope probe = new Scope(scope);
                assign(f.target(), item, probe);
                if (Py.truthy(eval.eval(f.filter(), probe))) {
                    kept.add(item);
                }
            }
            items = kept;
        }
        if (items.isEmpty()) {
            render(f.otherwise(), scope, out);
            return;
        }
        // loop.depth counts recursive-loop levels only (recursive loops are refused at load): always 1
        LoopContext loop = new LoopContext(items, 1);
        for (int k = 0; k < items.size(); k++) {
            loop.index0 = k;
            Scope inner = new Scope(scope);
            inner.set("loop", loop);
            assign(f.target(), items.get(k), inner);
            try {
                render(f.body(), inner, out);
            } catch (RuntimeException e) {
                if (e == BREAK) {
                    break;
                }
                if (e != CONTINUE) {
                    throw e;
                }
            }
        }
    }

    void assign(Node.Target target, Object value, Scope scope) {
        switch (target) {
            case Node.Target.Name n -> scope.set(n.name(), value);
            case Node.Target.Attr a -> {
                Object ns = scope.lookup(a.name());
                if (!(ns instanceof Namespace namespace)) {
                    throw RenderException.raised("cannot assign attribute on non-namespace object");
                }
                namespace.attributes.put(a.attr(), value);
            }
            case Node.Target.Unpack u -> {
                List<Object> values = Py.iterate(value);
                if (values.size() != u.targets().size()) {
                    throw RenderException.value((values.size() > u.targets().size() ? "too many values to unpack"
                            : "not enough values to unpack") + " (expected " + u.targets().size() + ", got "
                            + values.size() + ")");
                }
                for (int k = 0; k < values.size(); k++) {
                    assign(u.targets().get(k), values.get(k), scope);
                }
            }
        }
    }

    /** A template macro (or the {@code caller} of a call block): renders its body with the bound arguments. */
    static final class Macro implements PyCallable {
        private final Node.Macro node;
        private final Scope closure;
        private final Renderer renderer;

        Macro(Node.Macro node, Scope closure, Renderer renderer, Object unused) {
            this.node = node;
            this.closure = closure;
            this.renderer = renderer;
        }

        @Override
        public Object call(List<Object> args, Map<String, Object> kwargs) {
            Scope scope = new Scope(closure);
            List<String> params = node.params();
            int firstDefault = params.size() - node.defaults().size();
            Map<String, Object> extra = new LinkedHashMap<>(kwargs);
            Object caller = extra.remove("caller");
            if (caller != null) {
                scope.set("caller", caller);
            }
            for (int k = 0; k < params.size(); k++) {
                String name = params.get(k);
                if (k < args.size()) {
                    scope.set(name, args.get(k));
                } else if (extra.containsKey(name)) {
                    scope.set(name, extra.remove(name));
                } else if (k >= firstDefault) {
                    scope.set(name, renderer.eval.eval(node.defaults().get(k - firstDefault), scope));
                } else {
                    scope.set(name, Undefined.plain("parameter '" + name + "' was not provided"));
                }
            }
            List<Object> varargs = args.size() > params.size() ? args.subList(params.size(), args.size()) : List.of();
            scope.set("varargs", Tuple.of(varargs));
            scope.set("kwargs", extra);
            StringBuilder out = new StringBuilder();
            renderer.render(node.body(), scope, out);
            return out.toString();
        }
    }
}
