package io.tqserve.cli;

import java.io.InputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.xml.parsers.DocumentBuilder;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.xml.sax.ErrorHandler;
import org.xml.sax.InputSource;
import org.xml.sax.SAXParseException;

/**
 * Reads an XML property list as plutil -lint does: parsed with the JDK's XML parser, validated against the plist
 * DTD (a local copy of its grammar), then turned into maps, lists, strings, longs and booleans.
 */
final class Plist {
    private Plist() {
    }

    static Object read(Path file) throws Exception {
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setValidating(true);
        f.setIgnoringComments(true);
        f.setIgnoringElementContentWhitespace(true);
        DocumentBuilder b = f.newDocumentBuilder();
        b.setEntityResolver((publicId, systemId) -> {
            if (!"-//Apple//DTD PLIST 1.0//EN".equals(publicId)) {
                throw new IllegalArgumentException("not a plist DTD: " + publicId + " " + systemId);
            }
            InputStream in = Plist.class.getResourceAsStream("plist-1.0.dtd");
            return new InputSource(in);
        });
        b.setErrorHandler(new ErrorHandler() {
            @Override
            public void warning(SAXParseException e) {
            }

            @Override
            public void error(SAXParseException e) throws SAXParseException {
                throw e;
            }

            @Override
            public void fatalError(SAXParseException e) throws SAXParseException {
                throw e;
            }
        });
        Element plist = b.parse(file.toFile()).getDocumentElement();
        if (!plist.getTagName().equals("plist")) {
            throw new IllegalArgumentException("root is " + plist.getTagName());
        }
        return value(children(plist).getFirst());
    }

    private static List<Element> children(Element e) {
        List<Element> out = new ArrayList<>();
        for (Node n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element c) {
                out.add(c);
            }
        }
        return out;
    }

    private static Object value(Element e) {
        return switch (e.getTagName()) {
            case "dict" -> {
                Map<String, Object> m = new LinkedHashMap<>();
                List<Element> c = children(e);
                for (int i = 0; i < c.size(); i += 2) {
                    m.put(c.get(i).getTextContent(), value(c.get(i + 1)));
                }
                yield m;
            }
            case "array" -> children(e).stream().map(Plist::value).toList();
            case "string" -> e.getTextContent();
            case "integer" -> Long.parseLong(e.getTextContent().strip());
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException("unexpected <" + e.getTagName() + ">");
        };
    }
}
