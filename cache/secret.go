package cache

import "fmt"

// Secret is a password or token. Its Format and MarshalText methods redact
// it, so a Secret printed with any fmt verb (%v, %+v, %#v, %s, %q, %x),
// alone or inside a struct, logged, or marshalled to JSON never shows its
// value. Use Reveal to get it.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

// redact returns what is shown in place of s.
func (s Secret) redact() string {
	if s == "" {
		return ""
	}
	return redacted
}

// Format implements fmt.Formatter so that every verb, %x and %q included,
// redacts.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(`cache.Secret("` + s.redact() + `")`))
		return
	}
	_, _ = f.Write([]byte(s.redact()))
}

// MarshalText implements encoding.TextMarshaler and redacts.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.redact()), nil }
