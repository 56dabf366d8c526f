package io.tqserve.template;

/**
 * A chat template that cannot be compiled or rendered. {@link #raisedByTemplate()} is true when the template's
 * own {@code raise_exception(message)} refused the conversation: {@link #getMessage()} is then exactly that
 * message, as Python raises it (a client error: the API answers 400 with it). Otherwise the message is the one
 * Python's Jinja2 gives (e.g. {@code 'dict object' has no attribute 'content'}) followed by the template line.
 */
public final class TemplateException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String pythonType;
    private final String pythonMessage;
    private final int line;

    TemplateException(String message, int line) {
        this("TemplateSyntaxError", message, line);
    }

    private TemplateException(String pythonType, String message, int line) {
        super(pythonType.equals("TemplateError") || line <= 0 ? message
                : message + " (chat template line " + line + ")");
        this.pythonType = pythonType;
        this.pythonMessage = message;
        this.line = line;
    }

    static TemplateException at(RenderException e, int line) {
        return new TemplateException(e.pythonType, e.getMessage(), line);
    }

    /** True when the template's {@code raise_exception(...)} rejected the conversation. */
    public boolean raisedByTemplate() {
        return pythonType.equals("TemplateError");
    }

    /** The message alone, without the template line: what Python's exception says. */
    public String pythonMessage() {
        return pythonMessage;
    }

    /** The Python exception type it corresponds to: TemplateError, UndefinedError, TypeError, TemplateSyntaxError... */
    public String pythonType() {
        return pythonType;
    }

    /** The template line the error is on (1-based), 0 when unknown. */
    public int line() {
        return line;
    }
}
