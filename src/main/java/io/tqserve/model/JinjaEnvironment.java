package io.tqserve.model;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.el.TruthyTypeConverter;
import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.interpret.InterpreterFactory;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.objects.date.StrftimeFormatter;
import java.lang.reflect.Method;
import java.time.ZonedDateTime;
import java.util.Iterator;
import java.util.Locale;
import jinjava.de.odysseus.el.ExpressionFactoryImpl;
import jinjava.de.odysseus.el.tree.TreeStore;
import jinjava.de.odysseus.el.tree.impl.Builder.Feature;
import jinjava.de.odysseus.el.tree.impl.Cache;
import jinjava.javax.el.CompositeELResolver;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELException;
import jinjava.javax.el.ELResolver;
import jinjava.javax.el.ExpressionFactory;

/**
 * The Jinjava set-up that renders Hugging Face chat templates as Python Jinja2 does in transformers'
 * {@code apply_chat_template}: {@code ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)} with the
 * loop-controls extension, a {@code json.dumps}-based {@code tojson}, and the {@code raise_exception} and
 * {@code strftime_now} globals. What Jinjava lacks or does differently is added here:
 * <ul>
 *   <li>Jinjava's "new behaviour" switches ({@link LegacyOverrides}): {@code -} whitespace control on
 *       <code>{{- ... -}}</code> too (without it only tags honour it), Python operator precedence, iteration over
 *       dict keys, dict keys that are expressions — all but {@code whitespaceRequiredWithinTokens}, which stops
 *       Jinjava from recognising {@code {%- if %}} at all;</li>
 *   <li>no nested interpretation: Jinjava would otherwise render template syntax found in a printed value, so a
 *       user message containing <code>{{ x }}</code> would be executed;</li>
 *   <li>values printed, and converted for {@code ~}, as Python's {@code str()} does ({@link PythonValues#str}):
 *       {@code True}, {@code 1e+20}, {@code ['a', None]}, {@code ('k', 1)};</li>
 *   <li>Python {@code str} methods ({@link PythonStrings}) ahead of Java's same-named ones, and {@code s[i]};</li>
 *   <li>three-part slices and Python slice semantics ({@link PythonSyntax});</li>
 *   <li>filters with Jinja2's results ({@link JinjaFilters}): {@code tojson} as
 *       {@code json.dumps(ensure_ascii=False)}, {@code trim}, {@code length}, {@code string}, {@code indent},
 *       {@code truncate}, {@code dictsort};</li>
 *   <li>a range limit of 100000 as Jinja2's sandbox ({@code MAX_RANGE}); Jinjava's default silently cuts
 *       {@code range()} at 1000;</li>
 *   <li>{@code trim_blocks}, {@code lstrip_blocks}, newline normalisation and the dropped trailing newline as
 *       Jinja2's lexer does them ({@link TemplateWhitespace}), since Jinjava's lstrip differs;</li>
 *   <li>{@code raise_exception(msg)}, which fails the render with {@link TemplateRaised}, and
 *       {@code strftime_now(fmt)}.</li>
 * </ul>
 */
final class JinjaEnvironment {

    /** Thrown by the template's own {@code raise_exception(message)} call. */
    static final class TemplateRaised extends ELException {
        private static final long serialVersionUID = 1L;

        TemplateRaised(String message) {
            super(message);
        }
    }

    private static final Jinjava JINJAVA = create();

    private JinjaEnvironment() {
    }

    static Jinjava jinjava() {
        return JINJAVA;
    }

    private static Jinjava create() {
        ELResolver resolver = new CompositeELResolver() {
            {
                add(new PythonMethodResolver());
                add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_ONLY);   // the sandbox is immutable
            }
        };
        JinjavaConfig config = JinjavaConfig.newBuilder()
                .withTrimBlocks(false)      // trim_blocks and lstrip_blocks: TemplateWhitespace
                .withLstripBlocks(false)
                .withLegacyOverrides(LegacyOverrides.newBuilder()
                        .withEvaluateMapKeys(true)
                        .withIterateOverMapKeys(true)
                        .withUsePyishObjectMapper(true)
                        .withUseSnakeCasePropertyNaming(true)
                        .withUseNaturalOperatorPrecedence(true)
                        .withParseWhitespaceControlStrictly(true)
                        .withAllowAdjacentTextNodes(true)
                        .withUseTrimmingForNotesAndExpressions(true)
                        .withKeepNullableLoopValues(true)
                        .build())
                .withNestedInterpretationEnabled(false)
                .withInterperterFactory(new PythonPrinting())
                .withRangeLimit(100_000)
                .withElResolver(resolver)
                .withLocale(Locale.ROOT)
                .build();
        ExpressionFactory factory = new ExpressionFactoryImpl(
                new TreeStore(new PythonSyntax.SyntaxBuilder(Feature.METHOD_INVOCATIONS, Feature.VARARGS),
                        new Cache(512)),
                new PythonStringConversion());
        Jinjava jinjava = new Jinjava(config) {
            @Override
            public ExpressionFactory getExpressionFactory() {
                return factory;
            }
        };
        jinjava.registerFunction(function("raise_exception", "raiseException", String.class));
        jinjava.registerFunction(function("strftime_now", "strftimeNow", String.class));
        jinjava.registerFunction(function(PythonSyntax.STEP_FUNCTION, PythonSyntax.class, "step",
                Object.class, Object.class));
        JinjaFilters.register(jinjava);
        return jinjava;
    }

    private static ELFunctionDefinition function(String name, String method, Class<?>... params) {
        return function(name, JinjaEnvironment.class, method, params);
    }

    private static ELFunctionDefinition function(String name, Class<?> owner, String method, Class<?>... params) {
        try {
            Method m = owner.getDeclaredMethod(method, params);
            m.setAccessible(true);
            return new ELFunctionDefinition("", name, m);
        } catch (NoSuchMethodException e) {
            throw new IllegalStateException(e);
        }
    }

    static Object raiseException(String message) {
        throw new TemplateRaised(message);
    }

    /** Python's {@code datetime.now().strftime(fmt)} in the C locale. */
    static String strftimeNow(String format) {
        return StrftimeFormatter.format(ZonedDateTime.now(), format, Locale.US);
    }

    /** Booleans and floats become text as Python's {@code str()} has it, e.g. in {@code 'a' ~ true} ("aTrue"). */
    private static final class PythonStringConversion extends TruthyTypeConverter {
        private static final long serialVersionUID = 1L;

        @Override
        protected String coerceToString(Object value) {
            if (value instanceof Boolean || value instanceof Double || value instanceof Float) {
                return PythonValues.str(value);
            }
            return super.coerceToString(value);
        }
    }

    /** Interpreters whose <code>{{ value }}</code> output is Python's {@code str(value)}. */
    private static final class PythonPrinting implements InterpreterFactory {
        @Override
        public JinjavaInterpreter newInstance(JinjavaInterpreter orig) {
            return new Interpreter(orig);
        }

        @Override
        public JinjavaInterpreter newInstance(Jinjava application, Context context, JinjavaConfig renderConfig) {
            return new Interpreter(application, context, renderConfig);
        }

        private static final class Interpreter extends JinjavaInterpreter {
            Interpreter(JinjavaInterpreter orig) {
                super(orig);
            }

            Interpreter(Jinjava application, Context context, JinjavaConfig renderConfig) {
                super(application, context, renderConfig);
            }

            @Override
            public String getAsString(Object object) {
                String python = PythonValues.str(object);
                return python != null ? python : super.getAsString(object);
            }
        }
    }

    /**
     * Python {@code str} methods and indexing on strings; everything else falls through to Jinjava's resolvers (which
     * would call Java's same-named methods, or fail on {@code s[0]}).
     */
    private static final class PythonMethodResolver extends ELResolver {
        @Override
        public Object invoke(ELContext context, Object base, Object method, Class<?>[] paramTypes,
                Object[] params) {
            if (!(base instanceof String s) || method == null) {
                return null;
            }
            context.setPropertyResolved(true);
            try {
                return PythonStrings.invoke(s, method.toString(), params == null ? new Object[0] : params);
            } catch (IllegalArgumentException e) {
                // Jinjava swallows IllegalArgumentException from method calls into an empty value; ELException
                // surfaces as a template error instead.
                throw new ELException(e.getMessage());
            }
        }

        /** {@code s[i]}: the code point at {@code i}, counted from the end when negative. */
        @Override
        public Object getValue(ELContext context, Object base, Object property) {
            Long index = base instanceof String ? integer(property) : null;
            if (index == null) {
                return null;
            }
            String s = (String) base;
            context.setPropertyResolved(true);
            int length = s.codePointCount(0, s.length());
            long i = index < 0 ? index + length : index;
            if (i < 0 || i >= length) {
                throw new ELException("string index out of range");
            }
            return new String(Character.toChars(s.codePointAt(s.offsetByCodePoints(0, (int) i))));
        }

        /** An integer index; Jinjava passes bracket properties on as strings. */
        private static Long integer(Object property) {
            return switch (property) {
                case Long l -> l;
                case Integer i -> (long) i;
                case String s when s.matches("-?\\d{1,9}") -> Long.parseLong(s);
                case null, default -> null;
            };
        }

        @Override
        public Class<?> getType(ELContext context, Object base, Object property) {
            return null;
        }

        @Override
        public void setValue(ELContext context, Object base, Object property, Object value) {
        }

        @Override
        public boolean isReadOnly(ELContext context, Object base, Object property) {
            return true;
        }

        @Override
        public Iterator<java.beans.FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) {
            return null;
        }

        @Override
        public Class<?> getCommonPropertyType(ELContext context, Object base) {
            return base instanceof String ? Object.class : null;
        }
    }
}
