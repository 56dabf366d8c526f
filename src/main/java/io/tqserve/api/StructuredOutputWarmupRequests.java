package io.tqserve.api;

import java.util.ArrayList;
import java.util.List;

/**
 * The chat requests of {@link StructuredOutputWarmup}: schemas that take the schema compiler and the masks down the
 * paths real schemas take (strings with bounds, numbers and integers with bounds, enums, arrays, nested and
 * recursive objects through {@code $ref}, {@code pattern}, {@code format}s, optional members, {@code anyOf} and
 * {@code oneOf}, {@code allOf}, {@code not}, {@code additionalProperties} with a schema, {@code prefixItems}), the
 * shapes of issue 29's attacks at a smaller size (a long {@code maxLength}, a large {@code maxItems}, a
 * {@code $ref} fan-out, many optional free-form members, a long {@code enum}), {@code json_object}, and a forced
 * tool call when the model's template renders tools.
 */
final class StructuredOutputWarmupRequests {
    /** Completion tokens of each request: room for every schema's shortest document on a small vocabulary. */
    static final int MAX_TOKENS = 64;
    /**
     * Values of the long enum: as many as issue 29's attack sends, so the request parser's and the enum compiler's
     * loops over them run often enough in the warm-up for the JIT to compile them (a shorter list leaves them to the
     * first long enum a client sends).
     */
    static final int ENUM_VALUES = 20_000;

    private StructuredOutputWarmupRequests() {
    }

    /** The request bodies; with {@code tools}, one forced tool call among them. */
    static List<String> bodies(boolean tools) {
        List<String> out = new ArrayList<>();
        for (String schema : schemas()) {
            out.add(chat(",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"w\",\"strict\":"
                    + "true,\"schema\":" + schema + "}}"));
        }
        out.add(chat(",\"response_format\":{\"type\":\"json_object\"}"));
        if (tools) {
            out.add(chat(",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":"
                    + "\"Weather of a city\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
                    + "\"string\",\"maxLength\":40},\"unit\":{\"enum\":[\"c\",\"f\"]},\"days\":{\"type\":\"integer\","
                    + "\"minimum\":1,\"maximum\":14}},\"required\":[\"city\"]}}}],\"tool_choice\":\"required\""));
        }
        return out;
    }

    private static String chat(String rest) {
        return "{\"model\":\"warmup\",\"messages\":[{\"role\":\"user\",\"content\":\"Fill in the record.\"}],"
                + "\"max_tokens\":" + MAX_TOKENS + ",\"temperature\":1" + rest + "}";
    }

    static List<String> schemas() {
        List<String> s = new ArrayList<>();
        // scalars with bounds, enums, optional members, formats
        s.add("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":24},"
                + "\"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":150},\"score\":{\"type\":\"number\","
                + "\"exclusiveMinimum\":0,\"maximum\":1},\"level\":{\"enum\":[\"low\",\"mid\",\"high\",3,null]},"
                + "\"active\":{\"type\":\"boolean\"},\"email\":{\"type\":\"string\",\"format\":\"email\"},"
                + "\"note\":{\"type\":[\"string\",\"null\"]}},\"required\":[\"name\",\"age\"],"
                + "\"additionalProperties\":false}");
        // arrays, nested objects, formats, patterns
        s.add("{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\",\"format\":\"uuid\"},\"when\":{"
                + "\"type\":\"string\",\"format\":\"date-time\"},\"day\":{\"type\":\"string\",\"format\":\"date\"},"
                + "\"code\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{2}-[0-9]{3,5}$\"},\"items\":{\"type\":"
                + "\"array\",\"minItems\":1,\"maxItems\":4,\"items\":{\"type\":\"object\",\"properties\":{\"sku\":{"
                + "\"type\":\"string\",\"maxLength\":8},\"qty\":{\"type\":\"integer\",\"minimum\":1},\"price\":{"
                + "\"type\":\"number\",\"multipleOf\":0.01}},\"required\":[\"sku\",\"qty\"]}},\"site\":{\"type\":"
                + "\"string\",\"format\":\"uri\"},\"ip\":{\"type\":\"string\",\"format\":\"ipv4\"}},\"required\":["
                + "\"id\",\"items\"]}");
        // recursion through $ref, anyOf, oneOf with const discriminators, allOf
        s.add("{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"label\":{\"type\":\"string\","
                + "\"maxLength\":12},\"children\":{\"type\":\"array\",\"maxItems\":3,\"items\":{\"$ref\":"
                + "\"#/$defs/node\"}}},\"required\":[\"label\"]},\"shape\":{\"oneOf\":[{\"type\":\"object\","
                + "\"properties\":{\"kind\":{\"const\":\"circle\"},\"r\":{\"type\":\"number\",\"minimum\":0}},"
                + "\"required\":[\"kind\",\"r\"]},{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"box\"},"
                + "\"w\":{\"type\":\"integer\"},\"h\":{\"type\":\"integer\"}},\"required\":[\"kind\",\"w\",\"h\"]}]}},"
                + "\"type\":\"object\",\"properties\":{\"tree\":{\"$ref\":\"#/$defs/node\"},\"shape\":{\"$ref\":"
                + "\"#/$defs/shape\"},\"value\":{\"anyOf\":[{\"type\":\"string\",\"maxLength\":10},{\"type\":"
                + "\"integer\"},{\"type\":\"null\"}]},\"both\":{\"allOf\":[{\"type\":\"integer\",\"minimum\":-5},{"
                + "\"maximum\":500}]}},\"required\":[\"tree\"]}");
        // additionalProperties with a schema, prefixItems, not, a time and an ipv6, a free value
        s.add("{\"type\":\"object\",\"properties\":{\"pair\":{\"type\":\"array\",\"prefixItems\":[{\"type\":"
                + "\"string\",\"maxLength\":6},{\"type\":\"number\"}],\"items\":false},\"at\":{\"type\":\"string\","
                + "\"format\":\"time\"},\"host\":{\"type\":\"string\",\"format\":\"ipv6\"},\"other\":{\"not\":{"
                + "\"type\":\"string\"}},\"extra\":{}},\"additionalProperties\":{\"type\":\"integer\"}}");
        // issue 29's attack shapes, smaller: a long string, a long array, a fan-out, many optional free members
        s.add("{\"type\":\"string\",\"maxLength\":2000}");
        s.add("{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"maxItems\":500}");
        StringBuilder refs = new StringBuilder("{\"$defs\":{\"l6\":{\"type\":\"integer\"}");
        for (int i = 5; i >= 0; i--) {
            refs.append(",\"l").append(i).append("\":{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":"
                    + "\"#/$defs/l").append(i + 1).append("\"},\"b\":{\"$ref\":\"#/$defs/l").append(i + 1)
                    .append("\"}},\"additionalProperties\":false}");
        }
        s.add(refs.append("},\"$ref\":\"#/$defs/l0\"}").toString());
        StringBuilder props = new StringBuilder("{\"type\":\"object\",\"properties\":{");
        for (int i = 0; i < 10; i++) {
            props.append(i == 0 ? "" : ",").append("\"p").append(i).append("\":{\"type\":\"object\"}");
        }
        s.add(props.append("}}").toString());
        StringBuilder en = new StringBuilder("{\"enum\":[");
        for (int i = 0; i < ENUM_VALUES; i++) {
            en.append(i == 0 ? "" : ",").append("\"value-").append(i).append('"');
        }
        s.add(en.append("]}").toString());
        return s;
    }
}
