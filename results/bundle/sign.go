package bundle

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// Signature is the member msjar/signature.json: an ed25519 signature of
// the statement "msjar v<version> campaign <id> merkle-root <root>\n".
// Signing the root signs every member (the index binds each member's
// sha256 to the root). The public key is carried for display only: a
// signature is trusted when it verifies against a key the reader gives
// (verify --key), never against the key the archive carries; without one
// it is checked against the carried key, which only tells a forged or
// damaged signature from a signature by whoever holds that key.
type Signature struct {
	Algorithm string `json:"algorithm"`
	// PublicKey is the signer's raw 32-byte key, base64; Fingerprint its
	// sha256 (hex).
	PublicKey   string `json:"public_key"`
	Fingerprint string `json:"fingerprint"`
	Statement   string `json:"statement"`
	Signature   string `json:"signature"`
}

func statement(id, root string) string {
	return fmt.Sprintf("msjar v%d campaign %s merkle-root %s\n", FormatVersion, id, root)
}

// Fingerprint is the hex sha256 of a raw ed25519 public key.
func Fingerprint(pub ed25519.PublicKey) string {
	s := sha256.Sum256(pub)
	return hex.EncodeToString(s[:])
}

func sign(key ed25519.PrivateKey, id, root string) ([]byte, error) {
	pub := key.Public().(ed25519.PublicKey)
	st := statement(id, root)
	s := Signature{Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(pub), Fingerprint: Fingerprint(pub),
		Statement: st, Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(key, []byte(st)))}
	b, err := json.MarshalIndent(s, "", "  ")
	return append(b, '\n'), err
}

// checkSignature verifies a signature member against pub for the
// archive's campaign and root.
func checkSignature(data []byte, id, root string, pub ed25519.PublicKey) (*Signature, error) {
	var s Signature
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("member %s: %w", SignatureMember, err)
	}
	if s.Algorithm != "ed25519" {
		return &s, fmt.Errorf("member %s: algorithm %q, want ed25519", SignatureMember, s.Algorithm)
	}
	if s.Statement != statement(id, root) {
		return &s, fmt.Errorf("member %s: signs %q, not this archive's root (%q)", SignatureMember, s.Statement, statement(id, root))
	}
	sig, err := base64.StdEncoding.DecodeString(s.Signature)
	if err != nil {
		return &s, fmt.Errorf("member %s: signature: %w", SignatureMember, err)
	}
	// Without a key to trust, the signature is still checked against the
	// key it carries, whose fingerprint is computed, not read: 64 zero
	// bytes under a copy of a real author's signature member were shown
	// as "by key fingerprint <the author's>", as a real signature is.
	carried, err := base64.StdEncoding.DecodeString(s.PublicKey)
	if err != nil || len(carried) != ed25519.PublicKeySize {
		return &s, fmt.Errorf("member %s: public_key is not a base64 ed25519 public key", SignatureMember)
	}
	if fp := Fingerprint(carried); s.Fingerprint != fp {
		return &s, fmt.Errorf("member %s: names fingerprint %q, but the key it carries has fingerprint %s (forged or damaged)", SignatureMember, s.Fingerprint, fp)
	}
	if pub == nil {
		if !ed25519.Verify(carried, []byte(s.Statement), sig) {
			return &s, fmt.Errorf("member %s: the signature does not verify even with the key the archive carries (fingerprint %s): forged or damaged", SignatureMember, s.Fingerprint)
		}
		return &s, nil
	}
	if !ed25519.Verify(pub, []byte(s.Statement), sig) {
		return &s, fmt.Errorf("member %s: the signature does not verify with the given key (fingerprint %s; the archive names signer %s)",
			SignatureMember, Fingerprint(pub), s.Fingerprint)
	}
	return &s, nil
}

// Key files are PEM, as OpenSSL writes them: a private key is PKCS #8
// ("PRIVATE KEY": openssl genpkey -algorithm ed25519), a public key is
// PKIX ("PUBLIC KEY": openssl pkey -pubout). GenerateKey writes such a
// pair.

// ReadPrivateKey reads an ed25519 private key (PEM, PKCS #8) from path.
func ReadPrivateKey(path string) (ed25519.PrivateKey, error) {
	return readKey[ed25519.PrivateKey](path, "PRIVATE KEY", x509.ParsePKCS8PrivateKey, "private")
}

// ReadPublicKey reads an ed25519 public key (PEM, PKIX) from path.
func ReadPublicKey(path string) (ed25519.PublicKey, error) {
	return readKey[ed25519.PublicKey](path, "PUBLIC KEY", x509.ParsePKIXPublicKey, "public")
}

// readKey reads the PEM block typ of path, parses it and checks it is
// an ed25519 key of type K.
func readKey[K any](path, typ string, parse func([]byte) (any, error), what string) (K, error) {
	var zero K
	blk, err := readPEM(path, typ)
	if err != nil {
		return zero, err
	}
	k, err := parse(blk)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	ek, ok := k.(K)
	if !ok {
		return zero, fmt.Errorf("%s: a %T, not an ed25519 %s key", path, k, what)
	}
	return ek, nil
}

func readPEM(path, typ string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) > 64<<10 {
		return nil, fmt.Errorf("%s: %d bytes: not a key file", path, len(data))
	}
	blk, _ := pem.Decode(data)
	if blk == nil {
		return nil, fmt.Errorf("%s: not a PEM file (want a %q block, as openssl writes)", path, typ)
	}
	if blk.Type != typ {
		return nil, fmt.Errorf("%s: a %q PEM block, want %q", path, blk.Type, typ)
	}
	return blk.Bytes, nil
}

// GenerateKey writes a new ed25519 key pair: the private key to priv
// (mode 0600, refused if it exists) and the public key to priv+".pub".
func GenerateKey(priv string) (ed25519.PublicKey, error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	p8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	px, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(priv, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: p8}), f.Close()); err != nil {
		os.Remove(priv)
		return nil, err
	}
	if err := os.WriteFile(priv+".pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: px}), 0o644); err != nil {
		os.Remove(priv)
		return nil, err
	}
	return pub, nil
}
