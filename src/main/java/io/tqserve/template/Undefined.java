package io.tqserve.template;

/**
 * Jinja2's default {@code Undefined}: a missing variable, attribute or item. It prints as "", is false, iterates
 * as empty and has length 0; using it any other way (an attribute, a call, arithmetic) raises Jinja2's
 * {@code UndefinedError} with the same message.
 */
final class Undefined {
    private final String message;
    private final boolean unsafe;

    private Undefined(String message) {
        this(message, false);
    }

    private Undefined(String message, boolean unsafe) {
        this.message = message;
        this.unsafe = unsafe;
    }

    /** An attribute the immutable sandbox refuses ({@code list.append}, {@code dict.update}): a SecurityError. */
    static Undefined unsafe(Object owner, String attribute) {
        return new Undefined("access to attribute '" + attribute + "' of '" + Py.typeName(owner)
                + "' object is unsafe.", true);
    }

    /** An undefined variable: {@code 'x' is undefined}. */
    static Undefined name(String name) {
        return new Undefined("'" + name + "' is undefined");
    }

    /** A missing attribute or item of {@code owner}. */
    static Undefined member(Object owner, Object key) {
        if (key instanceof String s) {
            return new Undefined("'" + Py.objectTypeRepr(owner) + "' has no attribute '" + s + "'");
        }
        return new Undefined(Py.objectTypeRepr(owner) + " has no element " + Py.repr(key));
    }

    /** An undefined with a plain message (e.g. the missing else branch of a conditional expression). */
    static Undefined plain(String message) {
        return new Undefined(message);
    }

    String message() {
        return message;
    }

    RenderException fail() {
        return unsafe ? RenderException.security(message) : RenderException.undefined(message);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Undefined;
    }

    @Override
    public int hashCode() {
        return 0;
    }

    @Override
    public String toString() {
        return "";
    }
}
