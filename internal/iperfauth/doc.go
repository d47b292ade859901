// Package iperfauth is iperf3's RSA authentication (3.x, checked against
// 3.21's src/iperf_auth.c): the client encrypts its user name, password and
// clock with the server's public key and sends the result base64-encoded as
// the "authtoken" parameter; the server decrypts it, checks the clock against
// a skew threshold and the credentials against an authorized-users file.
//
// Behaviour follows 3.21 exactly where a peer can observe it:
//   - the plaintext is "user: NAME\npwd:  PASSWORD\nts:   UNIXSECONDS", read
//     back as C's sscanf reads it, so a user name or password containing white
//     space never authenticates (3.21 cannot send one either);
//   - OAEP (SHA-1, MGF1-SHA-1, empty label, OpenSSL's default) unless PKCS#1
//     v1.5 padding is chosen (3.21's --use-pkcs1-padding);
//   - the users file holds "name,sha256hex" lines, the hash being of
//     "{name}password"; lines that are empty, start with '#' or have no comma
//     are skipped; the file is read again for every check, so edits apply to
//     the next test;
//   - the timestamp must lie within the threshold (default 10 s) of the
//     server's clock, either way; 3.21 keeps no replay cache, so a token
//     replayed inside that window is accepted, and so it is here.
//
// The password is never part of an error message.
package iperfauth
