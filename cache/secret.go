package cache

import "fmt"

// Secret is a password or token. Its String, GoString, Format and MarshalText
// methods all redact it, so a Secret inside a struct printed with %v or %+v,
// logged, or marshalled to JSON never shows its value. Use Reveal to get it.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

// String implements fmt.Stringer and redacts.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString implements fmt.GoStringer and redacts.
func (s Secret) GoString() string { return `cache.Secret("` + s.String() + `")` }

// Format implements fmt.Formatter so that every verb, %x and %q included, redacts.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(s.GoString()))
		return
	}
	_, _ = f.Write([]byte(s.String()))
}

// MarshalText implements encoding.TextMarshaler and redacts.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
