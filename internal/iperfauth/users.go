package iperfauth

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// PasswordHash is the hash an authorized-users file holds for a user: the
// lower-case hex SHA-256 of "{user}password".
func PasswordHash(user, password string) string {
	sum := sha256.Sum256([]byte("{" + user + "}" + password))
	return hex.EncodeToString(sum[:])
}

// Users is a parsed authorized-users file. The zero value authorizes no one.
// It is safe for concurrent use once parsed.
type Users struct {
	// entries keeps every line's pair in order: iperf3 accepts a user when
	// any line matches, so a name may appear more than once.
	entries []userEntry
}

type userEntry struct{ user, hash string }

// maxLine is the most iperf3 reads as one line (fgets into 1024 bytes).
const maxLine = 1023

// ParseUsers reads an authorized-users file as 3.21 does: each line is cut
// at its first CR or LF; empty lines, lines starting with '#' and lines
// without a comma are skipped; the first two comma-separated fields that are
// not empty (strtok's rule) are the user and the hash, and anything after a
// third comma is ignored. A line longer than 1023 bytes is read in 1023-byte
// pieces, as fgets reads it. Only read errors fail.
func ParseUsers(r io.Reader) (*Users, error) {
	u := &Users{}
	br := bufio.NewReader(r)
	for {
		line, err := readPiece(br)
		if line != "" {
			u.addLine(line)
		}
		if err == io.EOF {
			return u, nil
		}
		if err != nil {
			return nil, fmt.Errorf("iperfauth: read authorized users: %w", err)
		}
	}
}

// readPiece returns what one fgets(buf, 1024) returns: up to 1023 bytes,
// ending after the first newline.
func readPiece(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for b.Len() < maxLine {
		c, err := br.ReadByte()
		if err != nil {
			return b.String(), err
		}
		b.WriteByte(c)
		if c == '\n' {
			break
		}
	}
	return b.String(), nil
}

func (u *Users) addLine(line string) {
	if i := strings.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	}
	if line == "" || line[0] == '#' || !strings.Contains(line, ",") {
		return
	}
	var fields []string
	for _, f := range strings.Split(line, ",") {
		if f != "" {
			fields = append(fields, f)
		}
		if len(fields) == 2 {
			break
		}
	}
	// iperf3 would dereference a NULL strtok result here and crash; such
	// a line authorizes no one.
	if len(fields) < 2 {
		return
	}
	u.entries = append(u.entries, userEntry{user: fields[0], hash: fields[1]})
}

// Len is the number of usable entries.
func (u *Users) Len() int { return len(u.entries) }

// Allowed reports whether some line names user with the hash of password.
func (u *Users) Allowed(user, password string) bool {
	if u == nil {
		return false
	}
	h := PasswordHash(user, password)
	ok := false
	for _, e := range u.entries {
		if e.user == user && subtle.ConstantTimeCompare([]byte(e.hash), []byte(h)) == 1 {
			ok = true
		}
	}
	return ok
}

// NewUsers builds Users from a map of user name to the hash an
// authorized-users file holds for it (PasswordHash).
func NewUsers(hashes map[string]string) *Users {
	u := &Users{}
	for name, h := range hashes {
		u.entries = append(u.entries, userEntry{user: name, hash: h})
	}
	return u
}
