package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pendingDocs are documents that docs/README.md lists before they exist:
// written on another branch. A link to one is not an error while it is
// missing.
var pendingDocs = map[string]bool{"docs/testing.md": true}

// Every relative link of the repository's Markdown files resolves: to a file
// or directory that exists and, for "file.md#anchor" or "#anchor", to a
// heading there (GitHub's anchors). Links in code blocks and code spans are
// not links.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	var docs []string
	require.NoError(t, filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			docs = append(docs, p)
		}
		return nil
	}))
	require.NotEmpty(t, docs)
	anchors := map[string]map[string]bool{}
	for _, doc := range docs {
		rel, _ := filepath.Rel(repoRoot, doc)
		for _, l := range markdownLinks(t, doc) {
			if regexp.MustCompile(`^[a-z]+:`).MatchString(l.target) {
				continue // http:, https:, mailto:
			}
			path, frag, _ := strings.Cut(l.target, "#")
			target := doc
			if path != "" {
				target = filepath.Join(filepath.Dir(doc), path)
			}
			targetRel, _ := filepath.Rel(repoRoot, target)
			if _, err := os.Stat(target); err != nil {
				if !pendingDocs[filepath.ToSlash(targetRel)] {
					t.Errorf("%s:%d: %s: no such file", rel, l.line, l.target)
				}
				continue
			}
			if frag == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			if anchors[target] == nil {
				anchors[target] = headingAnchors(t, target)
			}
			assert.True(t, anchors[target][frag], "%s:%d: %s: no heading #%s in %s", rel, l.line, l.target, frag, targetRel)
		}
	}
}

type mdLink struct {
	target string
	line   int
}

var (
	linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeRE = regexp.MustCompile("`[^`]*`")
)

// markdownLinks returns the link targets of a Markdown file, outside code.
func markdownLinks(t *testing.T, path string) []mdLink {
	t.Helper()
	var out []mdLink
	for i, line := range markdownProse(t, path) {
		if line == "" {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(line, ""), -1) {
			out = append(out, mdLink{target: m[1], line: i + 1})
		}
	}
	return out
}

// markdownProse returns the lines of a Markdown file, with those of fenced
// code blocks blanked.
func markdownProse(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(string(b), "\n")
	fenced := false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			lines[i] = ""
		} else if fenced {
			lines[i] = ""
		}
	}
	return lines
}

var (
	headingRE    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	unanchoredRE = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// headingAnchors returns the anchors GitHub gives a file's headings: lower
// case, punctuation dropped, spaces as hyphens, "-1", "-2" after repeats.
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range markdownProse(t, path) {
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := strings.ReplaceAll(unanchoredRE.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// docs/README.md links every document in docs/, and only documents that
// exist or are pending.
func TestDocsIndex(t *testing.T) {
	t.Parallel()
	index := filepath.Join(repoRoot, "docs", "README.md")
	listed := map[string]bool{}
	for _, l := range markdownLinks(t, index) {
		listed[l.target] = true
	}
	entries, err := os.ReadDir(filepath.Join(repoRoot, "docs"))
	require.NoError(t, err)
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") && e.Name() != "README.md" {
			assert.True(t, listed[e.Name()], "docs/README.md does not list %s", e.Name())
		}
	}
	for doc := range pendingDocs {
		assert.True(t, listed[strings.TrimPrefix(doc, "docs/")], "docs/README.md does not list %s", doc)
	}
}
