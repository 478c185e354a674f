package conformance

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// secretUser and secretPieces make up the userinfo of the malformed URLs:
// the pieces are joined by each character that ends a URL's host part, so
// that the user name and password are misread as host, port, path, query or
// fragment. No piece may show in an error.
const secretUser = "u5er-Kx"

var secretPieces = []string{"Pw0rd", "Zq7xV", "Mn3bQ"}

// malformedURLs returns URLs that NewPool must refuse, each holding the
// user name and password in its userinfo, written in some wrong way, or
// placed where a user name or password goes.
func malformedURLs() map[string]string {
	passwords := map[string]string{"Plain": strings.Join(secretPieces, "-")}
	for _, sep := range []string{"/", "?", "#", "@", ":", "%zz", "%", " ", "\x7f", "[", "//", "/?#", "@/"} {
		passwords[fmt.Sprintf("Sep%q", sep)] = strings.Join(secretPieces, sep)
	}
	shapes := map[string]string{
		"BadPort":      "redis://U:P@127.0.0.1:notaport",
		"PortTooHigh":  "redis://U:P@127.0.0.1:99999",
		"NoPasswordAt": "redis://U:P",
		"OnlyPassword": "redis://:P",
		"BadScheme":    "ftp://U:P@127.0.0.1:6379",
		"NoScheme":     "U:P@127.0.0.1:6379",
		"OpaqueScheme": "redis:U:P@127.0.0.1:6379",
		"OneSlash":     "redis:/U:P@127.0.0.1:6379",
		"LeadingSpace": " redis://U:P@127.0.0.1:6379",
		"NoHost":       "redis://U:P@",
		"NoHostPath":   "redis://U:P@/0",
		"BadDB":        "redis://U:P@127.0.0.1:6379/notadb",
		"DeepPath":     "redis://U:P@127.0.0.1:6379/0/1",
		"BadDuration":  "redis://U:P@127.0.0.1:6379/0?dial_timeout=x",
		"BadEscape":    "redis://U:P@127.0.0.1:6379/0?dial_timeout=%zz",
		"UnknownOpt":   "redis://U:P@127.0.0.1:6379?nope=1",
		"Fragment":     "redis://U:P@127.0.0.1:6379#frag",
		"BadHost":      "redis://U:P@127.0.0.1 x:6379",
		"OpenBracket":  "redis://U:P@[::1:6379",
		"ControlChar":  "redis://U:P@127.0.0.1:6379\n",
		"AtInQuery":    "redis://127.0.0.1:6379?client_name=U:P@x",
		"AtInPath":     "redis://127.0.0.1:6379/U:P@0",
		"InQuery":      "redis://127.0.0.1:6379?password=P",
		"DoubleAt":     "redis://U:P@127.0.0.1@:x",
	}
	out := make(map[string]string, len(passwords)*len(shapes))
	for pn, pass := range passwords {
		for sn, shape := range shapes {
			if !strings.Contains(shape, "@") && strings.Contains(pass, "@") {
				continue // a valid URL: the user name and password are the host
			}
			out[sn+"/"+pn] = strings.NewReplacer("U", secretUser, "P", pass).Replace(shape)
		}
	}
	return out
}

func (s *suite) testMalformedURLs(t *testing.T) {
	for name, rawURL := range malformedURLs() {
		t.Run(name, func(t *testing.T) {
			p, err := s.newPool(rawURL, nil)
			if p != nil {
				_ = p.Close()
			}
			require.Error(t, err, "%q", rawURL)
			for _, secret := range append([]string{secretUser}, secretPieces...) {
				assert.NotContains(t, err.Error(), secret, "the error of %q shows a piece of the userinfo", rawURL)
			}
		})
	}
}
