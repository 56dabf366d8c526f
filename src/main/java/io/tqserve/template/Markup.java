package io.tqserve.template;

/**
 * Jinja2's {@code Markup}: text marked safe by {@code |safe} or produced by {@code |escape}. It behaves as a str,
 * except that {@code +} with a plain str escapes the plain side (so {@code "x"|safe + obj|tojson} prints
 * {@code &#34;} for quotes, as Python does).
 */
record Markup(String text) {
    static Markup escape(Object v) {
        return v instanceof Markup m ? m : new Markup(Filters.escape(Py.str(v)));
    }

    @Override
    public String toString() {
        return text;
    }
}
