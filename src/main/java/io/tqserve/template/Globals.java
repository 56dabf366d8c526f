package io.tqserve.template;

import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The global functions of transformers' Jinja environment: Jinja2's {@code range}, {@code dict},
 * {@code namespace}, and transformers' {@code raise_exception} and {@code strftime_now}. They are ordinary
 * variables, so {@code strftime_now is defined} is true as in Python.
 */
final class Globals {
    private Globals() {
    }

    static Map<String, Object> create(Supplier<LocalDateTime> now) {
        Map<String, Object> g = new HashMap<>();
        g.put("range", (PyCallable) Globals::range);
        g.put("dict", (PyCallable) (args, kwargs) -> {
            Map<Object, Object> m = new LinkedHashMap<>();
            if (!args.isEmpty() && args.getFirst() instanceof Map<?, ?> base) {
                m.putAll(base);
            }
            m.putAll(kwargs);
            return m;
        });
        g.put("namespace", (PyCallable) (args, kwargs) -> {
            Namespace ns = new Namespace();
            if (!args.isEmpty() && args.getFirst() instanceof Map<?, ?> base) {
                base.forEach((k, v) -> ns.attributes.put(Py.str(k), v));
            }
            ns.attributes.putAll(kwargs);
            return ns;
        });
        g.put("raise_exception", (PyCallable) (args, kwargs) -> {
            throw RenderException.raised(Py.str(args.isEmpty() ? kwargs.get("message") : args.getFirst()));
        });
        g.put("strftime_now", (PyCallable) (args, kwargs) -> Formats.strftime(now.get(),
                Py.str(args.isEmpty() ? kwargs.get("format") : args.getFirst())));
        return Map.copyOf(g);
    }

    private static Object range(List<Object> args, Map<String, Object> kwargs) {
        long start = 0;
        long stop;
        long step = 1;
        if (args.size() == 1) {
            stop = Py.integer(args.getFirst());
        } else if (args.size() >= 2) {
            start = Py.integer(args.get(0));
            stop = Py.integer(args.get(1));
            step = args.size() > 2 ? Py.integer(args.get(2)) : 1;
        } else {
            throw RenderException.type("range expected at least 1 argument, got 0");
        }
        if (step == 0) {
            throw RenderException.value("range() arg 3 must not be zero");
        }
        List<Object> out = new ArrayList<>();
        for (long i = start; step > 0 ? i < stop : i > stop; i += step) {
            if (out.size() >= 100_000) {
                throw new RenderException("OverflowError", "Range too big. The sandbox blocks ranges larger than"
                        + " MAX_RANGE (100000).");
            }
            out.add(i);
        }
        return out;
    }
}
