package io.tqserve.constraint;

import dk.brics.automaton.Automaton;
import dk.brics.automaton.RegExp;
import java.util.Map;
import java.util.Set;

/**
 * String {@code format}s as automata over the string's characters, each a subset of what the format's RFC allows
 * and of what common validators (Python's jsonschema, Rust's jsonschema) accept, so an accepted string is valid
 * under any of them: dates are calendar dates (no February 29, which needs the year), times have no leap second,
 * {@code Z} or a numeric offset, URIs are absolute with a port of at most four digits and no IP literal (the host may
 * be empty, as in {@code file:///a}), e-mail
 * addresses are dot-atoms at a domain of labels of at most 63 characters.
 */
final class Formats {
    private static final String YEAR = "([1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])";
    private static final String MONTH_DAY = "((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]"
            + "|30)|02-(0[1-9]|1[0-9]|2[0-8]))";
    private static final String DATE = YEAR + "-" + MONTH_DAY;
    private static final String TIME = "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+\\-]([01][0-9]|2[0-3])"
            + ":[0-5][0-9])";
    private static final String HEX = "[0-9a-fA-F]";
    private static final String OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
    private static final String LABEL = "[A-Za-z0-9]([A-Za-z0-9\\-]{0,61}[A-Za-z0-9])?";
    private static final String ATOM = "[A-Za-z0-9!#$%&'*+/=?\\^_`{|}~\\-]+";
    private static final String H16 = HEX + "{1,4}";
    private static final String IPV6 = "((" + H16 + ":){7}" + H16
            + "|(" + H16 + ":){1,7}:"
            + "|(" + H16 + ":){1,6}:" + H16
            + "|(" + H16 + ":){1,5}(:" + H16 + "){1,2}"
            + "|(" + H16 + ":){1,4}(:" + H16 + "){1,3}"
            + "|(" + H16 + ":){1,3}(:" + H16 + "){1,4}"
            + "|(" + H16 + ":){1,2}(:" + H16 + "){1,5}"
            + "|" + H16 + ":(:" + H16 + "){1,6}"
            + "|:((:" + H16 + "){1,7}|:))";
    // URI characters outside the authority: unreserved, sub-delims, ':' '@' '/' '?' and percent-escapes
    private static final String PCHAR = "([A-Za-z0-9\\-._~!$&'()*+,;=:@/?]|%" + HEX + HEX + ")";
    private static final String PCHAR_NO_SLASH = "([A-Za-z0-9\\-._~!$&'()*+,;=:@?]|%" + HEX + HEX + ")";
    // with "//" an authority (host, possibly empty as in file:///a, optional port), else a path that does not
    // start with "//"
    private static final String URI = "[A-Za-z][A-Za-z0-9+.\\-]*:(//([A-Za-z0-9\\-._~!$&'()*+,;=]|%" + HEX + HEX
            + ")*(:[0-9]{1,4})?(/" + PCHAR + "*)?|/(" + PCHAR_NO_SLASH + PCHAR + "*)?|" + PCHAR_NO_SLASH + PCHAR
            + "*)?(#" + PCHAR + "*)?";

    // a relative reference (RFC 3986 4.2) whose first segment has no ':' (so it is not taken for a scheme)
    private static final String RELATIVE_REF = "(//([A-Za-z0-9\\-._~!$&'()*+,;=]|%" + HEX + HEX + ")*(:[0-9]{1,4})?)?"
            + "(/?([A-Za-z0-9\\-._~!$&'()*+,;=@]|%" + HEX + HEX + ")+)?(/" + PCHAR_NO_SLASH + "*)*(\\?" + PCHAR + "*)?(#"
            + PCHAR + "*)?";

    private static final Map<String, String> REGEX = Map.of(
            "date", DATE,
            "time", TIME,
            "date-time", DATE + "T" + TIME,
            "uuid", HEX + "{8}-" + HEX + "{4}-" + HEX + "{4}-" + HEX + "{4}-" + HEX + "{12}",
            "ipv4", OCTET + "(\\." + OCTET + "){3}",
            "ipv6", IPV6,
            "email", ATOM + "(\\." + ATOM + ")*@" + LABEL + "(\\." + LABEL + ")+",
            "uri", URI,
            "hostname", LABEL + "(\\." + LABEL + ")*",
            "uri-reference", "(" + URI + ")|(" + RELATIVE_REF + ")");

    /** The supported format names. */
    static final Set<String> SUPPORTED = REGEX.keySet();

    private Formats() {
    }

    /** The minimal automata of the formats, built once (a uri's takes some 100 ms): callers get copies. */
    private static final java.util.concurrent.ConcurrentHashMap<String, Automaton> BUILT =
            new java.util.concurrent.ConcurrentHashMap<>();

    /** The strings of {@code format} (a copy the caller may change), or null if it is not supported. */
    static Automaton chars(String format) {
        String re = REGEX.get(format);
        if (re == null) {
            return null;
        }
        return BUILT.computeIfAbsent(format, f -> {
            Automaton a = new RegExp(re, RegExp.NONE).toAutomaton();
            a.minimize();
            return a;
        }).clone();
    }
}
