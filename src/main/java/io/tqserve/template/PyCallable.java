package io.tqserve.template;

import java.util.List;
import java.util.Map;

/** Something a template can call: a global function, a bound str/dict/list method, a macro, {@code loop.cycle}. */
@FunctionalInterface
interface PyCallable {
    Object call(List<Object> args, Map<String, Object> kwargs);
}
