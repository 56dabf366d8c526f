package io.tqserve.template;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Python semantics the chat-template engine relies on; every expected value was printed by CPython 3.11. */
class PythonSemanticsTest {

    @Test
    void floatReprMatchesPythonReprIncludingExponentThresholds() {
        double[] values = {1e16, 1e15, 0.0001, 0.1 + 0.2, 123456789.123, -1e-300, Double.MIN_VALUE, Double.MAX_VALUE,
            2.5, 100.0, 1e22, 12345678901234567.0, 1e-5, -0.0, 0.0, 1e-323, 1e-322};
        String[] python = {"1e+16", "1000000000000000.0", "0.0001", "0.30000000000000004", "123456789.123",
            "-1e-300", "5e-324", "1.7976931348623157e+308", "2.5", "100.0", "1e+22", "1.2345678901234568e+16",
            "1e-05", "-0.0", "0.0", "1e-323", "1e-322"};
        for (int i = 0; i < values.length; i++) {
            assertEquals(python[i], PyText.floatRepr(values[i]), "repr(" + values[i] + ")");
        }
    }

    @Test
    void jsonDumpsMatchesPythonWithIndentSeparatorsAndSortKeys() {
        Map<String, Object> nested = new LinkedHashMap<>();
        nested.put("a", List.of(1L, Map.of()));
        nested.put("b", List.of());
        nested.put("c", "\u007f\u2028");
        assertEquals("{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": [],\n  \"c\": \"\u007f\u2028\"\n}",
                new JsonDumps(2L, null, false, false).dumps(nested));
        Map<String, Object> unsorted = new LinkedHashMap<>();
        unsorted.put("b", 1L);
        unsorted.put("a", List.of(1L, 2L));
        assertEquals("{\"a\":[1,2],\"b\":1}", new JsonDumps(null, List.of(",", ":"), true, false).dumps(unsorted));
        assertEquals("{\"b\": 1, \"a\": [1, 2]}", new JsonDumps(null, null, false, false).dumps(unsorted));
        assertEquals("\"\\u00e9\\u007f\"", new JsonDumps(null, null, false, true).dumps("é\u007f"));
    }

    @Test
    void strOfValuesIsPythonsListAndScalarRepr() {
        List<Object> items = Arrays.asList("it's", "a\"b", "both'\"", "\n\t\u0000é\u200b😀", null, true, 1.5);
        assertEquals("[\"it's\", 'a\"b', 'both\\'\"', '\\n\\t\\x00é\\u200b😀', None, True, 1.5]", Py.str(items));
        assertEquals("False", Py.str(false));
        assertEquals("1e+20", Py.str(1e20));
        assertEquals("('a',)", Py.str(new Tuple("a")));
    }

    @Test
    void splitAndRsplitFollowPythonIncludingWhitespaceAndMaxsplit() {
        String s = "  a  b\u3000c\u00a0 ";
        assertEquals(List.of("a", "b", "c"), PyText.split(s, null, -1));
        assertEquals(List.of("a", "b\u3000c\u00a0 "), PyText.split(s, null, 1));
        assertEquals(List.of("  a  b", "c"), PyText.rsplit(s, null, 1));
        assertEquals(List.of("a", "b", "", "c", ""), PyText.split("a,b,,c,", ",", -1));
        assertEquals(List.of("a", "b", ",c,"), PyText.split("a,b,,c,", ",", 2));
        assertEquals(List.of("a,b,", "c", ""), PyText.rsplit("a,b,,c,", ",", 2));
        assertEquals(List.of("", ""), PyText.split("x", "x", -1));
        assertThrows(RenderException.class, () -> PyText.split("x", "", -1));
    }

    private static Object call(String s, String method, Object... args) {
        return ((PyCallable) Methods.lookup(s, method)).call(Arrays.asList(args), Map.of());
    }

    @Test
    void otherStringMethodsFollowPython() {
        assertEquals(List.of("a", "b", "c", "d", "e", "f"), call("a\r\nb\nc\rd\u001ce\u2028f", "splitlines"));
        assertEquals("-a-b-😀-", call("ab😀", "replace", "", "-"));
        assertEquals("bba", call("aaa", "replace", "a", "b", 2L));
        assertEquals(3L, call("ab😀c", "find", "c"));
        assertEquals(2L, call("aaaa", "count", "aa"));
        assertEquals(3L, call("ab", "count", ""));
        assertEquals("think>x</think", call("<think>x</think>", "strip", "<>"));
        assertEquals("x", call("  \t\nx \u2003", "strip"));
        assertEquals("hixx", call("xxhixx", "lstrip", "x"));
        assertEquals("They'Re Bill'S 3Rd", call("they're bill's 3rd", "title"));
        assertEquals("Ss", call("ß", "capitalize"));
        assertEquals(true, call("a.md", "endswith", new Tuple(".txt", ".md")));
    }

    @Test
    void slicesFollowPythonIncludingStepsNegativeIndicesAndCodePoints() {
        List<Object> five = List.of(0L, 1L, 2L, 3L, 4L);
        assertEquals(List.of(4L, 3L, 2L, 1L, 0L), Py.slice(five, null, null, -1L));
        assertEquals(List.of(1L, 3L), Py.slice(five, 1L, null, 2L));
        assertEquals(List.of(3L, 4L), Py.slice(five, -2L, null, null));
        assertEquals(five, Py.slice(five, -99L, 99L, null));
        assertEquals(List.of(4L, 2L), Py.slice(five, 99L, 1L, -2L));
        assertEquals(List.of(), Py.slice(five, 3L, 1L, null));
        assertEquals("c😀ba", Py.slice("ab😀c", null, null, -1L));
        assertEquals(List.of(3L, 2L), Py.slice(List.of(1L, 2L, 3L), null, -3L, -1L));
    }
}
