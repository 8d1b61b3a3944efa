/**
 * The service's few HTML pages (the sign-in form, the account pages, and what they say when they
 * cannot go on): server-rendered, usable without JavaScript, styled by one stylesheet the
 * service serves itself. Every value is escaped on its way into the markup.
 */

export const HTML_MEDIA_TYPE = 'text/html';
/** The Content-Type of a page. */
export const HTML = `${HTML_MEDIA_TYPE}; charset=utf-8`;
export const STYLESHEET_PATH = '/security/sign-in.css';

/** The characters that mean something in HTML text and in quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/**
 * What every page is sent with. The CSP allows nothing but the service's stylesheet: no
 * script, no frame around the page (clickjacking, RFC 9700 §4.16), no other form target.
 * `form-action` governs the redirect that follows the form's post too, so it names the
 * origin the sign-in sends the browser back to. `Referrer-Policy: same-origin` keeps the
 * page's address from every other site, and, unlike `no-referrer` (under which browsers send
 * `Origin: null` with the form), lets the post say it comes from this origin: the sign-in
 * refuses posts from anywhere else (login CSRF).
 */
export function pageHeaders(redirectOrigins: readonly string[] = []): Record<string, string> {
  const formAction = ["'self'", ...redirectOrigins.map(formActionSource)].join(' ');
  return {
    'Content-Security-Policy': `default-src 'none'; style-src 'self'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
    'X-Frame-Options': 'DENY',
    'Cache-Control': 'no-store',
    Pragma: 'no-cache',
    'Referrer-Policy': 'same-origin',
    'X-Content-Type-Options': 'nosniff',
  };
}

/** A CSP source for an origin (a scheme passes as it is). CSP has no syntax for an IPv6 literal, so `http://[::1]:port` can only be its scheme. */
function formActionSource(origin: string): string {
  return origin.includes('[') ? `${new URL(origin).protocol}` : origin;
}

/** The document around a page's content. */
export function layout(title: string, content: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="${STYLESHEET_PATH}">
</head>
<body>
<main>
${content}
</main>
</body>
</html>
`;
}

/** A page that says why a page cannot go on; it links nowhere, since no destination is trusted. */
export function errorPage(title: string, detail: string): string {
  return layout(
    title,
    `<h1>${escapeHtml(title)}</h1>
<p class="error" role="alert">${escapeHtml(detail)}</p>`,
  );
}

export const STYLESHEET = `:root {
  color-scheme: light dark;
  --accent: #2457c5;
  --error: #b3261e;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  line-height: 1.5;
}
body {
  margin: 0;
  min-height: 100vh;
  display: grid;
  place-items: center;
  background: Canvas;
  color: CanvasText;
}
main {
  width: min(100% - 2rem, 24rem);
  padding: 2rem;
  border: 1px solid color-mix(in srgb, CanvasText 20%, transparent);
  border-radius: 0.75rem;
}
h1 {
  font-size: 1.5rem;
  margin: 0 0 0.5rem;
}
p {
  margin: 0 0 1rem;
}
.error {
  color: var(--error);
  font-weight: 600;
}
.field-error {
  margin: 0;
}
input[aria-invalid="true"] {
  border-color: var(--error);
}
nav {
  margin-top: 1.25rem;
  display: flex;
  flex-wrap: wrap;
  gap: 0.5rem 1.5rem;
}
a {
  color: var(--accent);
}
form {
  display: grid;
  gap: 0.25rem;
}
label {
  font-weight: 600;
  margin-top: 0.75rem;
}
input {
  font: inherit;
  padding: 0.5rem 0.75rem;
  border: 1px solid color-mix(in srgb, CanvasText 40%, transparent);
  border-radius: 0.375rem;
}
input:focus-visible,
button:focus-visible {
  outline: 3px solid var(--accent);
  outline-offset: 2px;
}
button {
  margin-top: 1.25rem;
  font: inherit;
  font-weight: 600;
  padding: 0.625rem;
  border: 0;
  border-radius: 0.375rem;
  background: var(--accent);
  color: #fff;
  cursor: pointer;
}
`;
