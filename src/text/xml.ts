/**
 * XML escaping for model-facing envelopes. Escaped text cannot close or open an element, so a label or
 * an output that contains `</task-notification>` or a whole fake envelope stays inert data.
 */

// Characters XML 1.0 does not allow at all (C0 controls other than tab, LF, CR; lone surrogates; U+FFFE/F).
const INVALID_XML_CHARS =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: these are exactly the characters to remove
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Replaces characters XML cannot carry with U+FFFD. */
export function replaceInvalidXmlChars(text: string): string {
  return text.replace(INVALID_XML_CHARS, '\ufffd');
}

/** Escapes element text: `&`, `<` and `>`; invalid characters become U+FFFD. */
export function escapeXmlText(text: string): string {
  return replaceInvalidXmlChars(text).replace(/[&<>]/g, (char) =>
    char === '&' ? '&amp;' : char === '<' ? '&lt;' : '&gt;',
  );
}

/** Escapes an attribute value for double quotes: `&`, `<`, `>`, `"`; line breaks become character references. */
export function escapeXmlAttribute(text: string): string {
  return replaceInvalidXmlChars(text).replace(/[&<>"\n\r\t]/g, (char) => {
    switch (char) {
      case '&':
        return '&amp;';
      case '<':
        return '&lt;';
      case '>':
        return '&gt;';
      case '"':
        return '&quot;';
      case '\n':
        return '&#10;';
      case '\r':
        return '&#13;';
      default:
        return '&#9;';
    }
  });
}
