package io.tqserve.template;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Evaluates expression nodes with Python's semantics and Jinja2's sandboxed attribute/item lookup. */
final class Evaluator {
    private final Renderer renderer;

    Evaluator(Renderer renderer) {
        this.renderer = renderer;
    }

    Object eval(Expr e, Scope s) {
        return switch (e) {
            case Expr.Const c -> c.value();
            case Expr.Name n -> {
                Object v = s.lookup(n.name());
                yield v == Py.MISSING ? Undefined.name(n.name()) : v;
            }
            case Expr.ListLit l -> {
                List<Object> out = new ArrayList<>(l.items().size());
                l.items().forEach(i -> out.add(eval(i, s)));
                yield out;
            }
            case Expr.TupleLit t -> {
                Object[] out = new Object[t.items().size()];
                for (int i = 0; i < out.length; i++) {
                    out[i] = eval(t.items().get(i), s);
                }
                yield new Tuple(out);
            }
            case Expr.DictLit d -> {
                Map<Object, Object> out = new LinkedHashMap<>();
                for (int i = 0; i < d.keys().size(); i++) {
                    out.put(eval(d.keys().get(i), s), eval(d.values().get(i), s));
                }
                yield out;
            }
            case Expr.GetAttr a -> getattr(defined(eval(a.obj(), s)), a.name());
            case Expr.GetItem g -> getitem(defined(eval(g.obj(), s)), eval(g.key(), s));
            case Expr.Slice sl -> Py.slice(defined(eval(sl.obj(), s)), optional(sl.start(), s),
                    optional(sl.stop(), s), optional(sl.step(), s));
            case Expr.Call c -> call(c, s, null);
            case Expr.Filter f -> applyFilter(f, null, s);
            case Expr.Test t -> {
                boolean r = Tests.apply(t.name(), eval(t.value(), s), args(t.args(), s), this);
                yield t.negated() != r;
            }
            case Expr.Unary u -> unary(u.op(), eval(u.operand(), s));
            case Expr.Binary b -> Operators.binary(b.op(), eval(b.left(), s), eval(b.right(), s));
            case Expr.And a -> {
                Object l = eval(a.left(), s);
                yield Py.truthy(l) ? eval(a.right(), s) : l;
            }
            case Expr.Or o -> {
                Object l = eval(o.left(), s);
                yield Py.truthy(l) ? l : eval(o.right(), s);
            }
            case Expr.Not n -> !Py.truthy(eval(n.operand(), s));
            case Expr.Compare c -> compare(c, s);
            case Expr.Cond c -> Py.truthy(eval(c.test(), s)) ? eval(c.then(), s)
                    : c.otherwise() == null ? Undefined.plain("the inline if-expression evaluated to false and no"
                    + " else section was defined.") : eval(c.otherwise(), s);
            case Expr.Concat c -> {
                StringBuilder b = new StringBuilder();
                c.parts().forEach(p -> b.append(Py.str(eval(p, s))));
                yield b.toString();
            }
        };
    }

    private Object optional(Expr e, Scope s) {
        if (e == null) {
            return null;
        }
        Object v = eval(e, s);
        if (v != null && !(v instanceof Long) && !(v instanceof Boolean)) {
            throw RenderException.type("slice indices must be integers or None or have an __index__ method");
        }
        return v;
    }

    private static Object defined(Object v) {
        if (v instanceof Undefined u) {
            throw u.fail();
        }
        return v;
    }

    private static Object unary(String op, Object v) {
        defined(v);
        if (v instanceof Long l) {
            return op.equals("-") ? -l : l;
        }
        if (v instanceof Double d) {
            return op.equals("-") ? -d : d;
        }
        if (v instanceof Boolean b) {
            return op.equals("-") ? -Py.integer(b) : Py.integer(b);
        }
        throw RenderException.type("bad operand type for unary " + op + ": '" + Py.typeName(v) + "'");
    }

    private Object compare(Expr.Compare c, Scope s) {
        Object left = eval(c.first(), s);
        for (int i = 0; i < c.ops().size(); i++) {
            Object right = eval(c.rest().get(i), s);
            String op = c.ops().get(i);
            boolean r = switch (op) {
                case "==" -> Py.eq(left, right);
                case "!=" -> !Py.eq(left, right);
                case "in" -> Py.contains(right, left);
                case "notin" -> !Py.contains(right, left);
                case "<" -> Py.compare(left, right, op) < 0;
                case "<=" -> Py.compare(left, right, op) <= 0;
                case ">" -> Py.compare(left, right, op) > 0;
                default -> Py.compare(left, right, op) >= 0;
            };
            if (!r) {
                return false;
            }
            left = right;
        }
        return true;
    }

    /** Evaluated arguments: positional first, then keyword (names kept in {@link Arguments}). */
    Arguments args(Expr.Args a, Scope s) {
        List<Object> positional = new ArrayList<>(a.positional().size());
        a.positional().forEach(p -> positional.add(eval(p, s)));
        Map<String, Object> kwargs = a.names().isEmpty() ? Map.of() : new LinkedHashMap<>();
        for (int i = 0; i < a.names().size(); i++) {
            kwargs.put(a.names().get(i), eval(a.values().get(i), s));
        }
        return new Arguments(positional, kwargs);
    }

    Object call(Expr.Call c, Scope s, Renderer.Macro caller) {
        Object fn = defined(eval(c.fn(), s));
        Arguments a = args(c.args(), s);
        Map<String, Object> kwargs = a.kwargs();
        if (caller != null) {
            kwargs = new LinkedHashMap<>(kwargs);
            kwargs.put("caller", caller);
        }
        if (!(fn instanceof PyCallable f)) {
            throw RenderException.type("'" + Py.typeName(fn) + "' object is not callable");
        }
        return f.call(a.positional(), kwargs);
    }

    /** A filter chain; {@code blockText} is the body of a filter/set block (the innermost value). */
    Object applyFilter(Expr.Filter f, Object blockText, Scope s) {
        Object value;
        if (f.value() == null) {
            value = blockText;
        } else if (f.value() instanceof Expr.Filter inner) {
            value = applyFilter(inner, blockText, s);
        } else {
            value = eval(f.value(), s);
        }
        return Filters.apply(f.name(), value, args(f.args(), s), this);
    }

    // ---- Jinja2 sandbox lookups ----

    /** {@code obj.name}: the attribute (a bound method for str/list/dict), else the item, else undefined. */
    static Object getattr(Object obj, String name) {
        switch (obj) {
            case Map<?, ?> m -> {
                Object method = Methods.lookup(m, name);
                if (method != null) {
                    return method;
                }
                Object v = Py.item(m, name);
                return v == Py.MISSING ? Undefined.member(obj, name) : v;
            }
            case Namespace n -> {
                Object v = n.attributes.getOrDefault(name, Py.MISSING);
                return v == Py.MISSING ? Undefined.member(obj, name) : v;
            }
            case LoopContext l -> {
                Object v = l.attribute(name);
                return v == Py.MISSING ? Undefined.member(obj, name) : v;
            }
            case null, default -> {
                Object method = Methods.lookup(obj, name);
                return method != null ? method : Undefined.member(obj, name);
            }
        }
    }

    /** {@code obj[key]}: the item, else (for a string key) the attribute, else undefined. */
    static Object getitem(Object obj, Object key) {
        if (key instanceof Tuple && !(obj instanceof Map)) {
            throw RenderException.type("list indices must be integers or slices, not tuple");
        }
        Object v = Py.item(obj, key);
        if (v != Py.MISSING) {
            return v;
        }
        if (key instanceof String s) {
            return getattr(obj, s);
        }
        return Undefined.member(obj, key);
    }

    /** Looks up {@code a.b.0} style attribute paths (for map/selectattr/sort/... filters). */
    static Object attributePath(Object item, String path) {
        Object v = item;
        for (String part : path.split("\\.")) {
            Object key = part.chars().allMatch(Character::isDigit) && !part.isEmpty() ? (Object) Long.parseLong(part)
                    : part;
            v = getitem(v, key);
        }
        return v;
    }

    /** Evaluated call arguments. */
    record Arguments(List<Object> positional, Map<String, Object> kwargs) {
        Object get(int index, String name, Object fallback) {
            if (index < positional.size()) {
                return positional.get(index);
            }
            return kwargs.containsKey(name) ? kwargs.get(name) : fallback;
        }

        boolean has(int index, String name) {
            return index < positional.size() || kwargs.containsKey(name);
        }

        int size() {
            return positional.size();
        }
    }
}
