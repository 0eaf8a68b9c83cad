//! The comparison table: each case lays out files under a temp dir
//! (`{ROOT}` in any text stands for it) and processes `content` as if it
//! were a file in `base`.

/// Where we deliberately produce something other than the reference.
#[derive(Debug, Clone)]
pub struct Difference {
    pub why: &'static str,
    pub content: &'static str,
    /// Expected import tree, as JSON.
    pub tree: &'static str,
}

#[derive(Debug, Clone, Default)]
pub struct Case {
    pub name: &'static str,
    pub content: &'static str,
    pub files: Vec<(&'static str, &'static str)>,
    pub bytes: Vec<(&'static str, &'static [u8])>,
    pub dirs: Vec<&'static str>,
    pub symlinks: Vec<(&'static str, &'static str)>,
    /// Directory of the importing text, relative to the temp dir.
    pub base: &'static str,
    /// Explicit project root, relative to the temp dir.
    pub project_root: Option<&'static str>,
    pub flat: bool,
    pub max_depth: Option<usize>,
    pub differs: Option<Difference>,
}

fn case(name: &'static str, content: &'static str) -> Case {
    Case {
        name,
        content,
        ..Case::default()
    }
}

impl Case {
    fn file(mut self, path: &'static str, text: &'static str) -> Self {
        self.files.push((path, text));
        self
    }
    fn bytes(mut self, path: &'static str, data: &'static [u8]) -> Self {
        self.bytes.push((path, data));
        self
    }
    fn dir(mut self, path: &'static str) -> Self {
        self.dirs.push(path);
        self
    }
    fn link(mut self, path: &'static str, target: &'static str) -> Self {
        self.symlinks.push((path, target));
        self
    }
    fn base(mut self, base: &'static str) -> Self {
        self.base = base;
        self
    }
    fn root(mut self, root: &'static str) -> Self {
        self.project_root = Some(root);
        self
    }
    fn flat(mut self) -> Self {
        self.flat = true;
        self
    }
    fn depth(mut self, depth: usize) -> Self {
        self.max_depth = Some(depth);
        self
    }
    fn differs(mut self, why: &'static str, content: &'static str, tree: &'static str) -> Self {
        self.differs = Some(Difference { why, content, tree });
        self
    }
}

const TILDE_WHY: &str = "`~~~` fenced blocks are code: imports inside them are left alone \
     (the reference only recognises backtick code)";

pub fn cases() -> Vec<Case> {
    vec![
        case("relative_same_dir", "Intro\n@./a.md\nOutro").file("a.md", "Alpha"),
        case("bare_name", "@a.md").file("a.md", "Alpha"),
        case("relative_subdir", "See @./sub/b.md now").file("sub/b.md", "Bee\n"),
        case("parent_dir_inside_root", "@../top.md")
            .dir(".git")
            .dir("sub")
            .base("sub")
            .file("top.md", "Top"),
        case("absolute_path", "abs: @{ROOT}/abs.md").file("abs.md", "Absolute"),
        case("nested", "Root\n@./a.md\nEnd")
            .file("a.md", "A\n@./b.md")
            .file("b.md", "B\n@./sub/c.md")
            .file("sub/c.md", "C"),
        case("nested_relative_to_importer", "@./sub/x.md")
            .file("sub/x.md", "X @./y.md")
            .file("sub/y.md", "inner y")
            .file("y.md", "outer y"),
        case("nested_parent_from_subdir", "@./sub/x.md")
            .file("sub/x.md", "X @../y.md")
            .file("y.md", "outer y"),
        case("cycle_a_b_a", "@./a.md").file("a.md", "A @./b.md").file("b.md", "B @./a.md"),
        case("self_import", "@./a.md").file("a.md", "self: @./a.md"),
        case("diamond_imports_twice", "@./a.md")
            .file("a.md", "@./b.md\n@./c.md")
            .file("b.md", "B @./d.md")
            .file("c.md", "C @./d.md")
            .file("d.md", "D"),
        case("same_file_twice_on_one_line", "@./a.md and @./a.md").file("a.md", "A"),
        case("depth_limit_default", "@./l1.md")
            .file("l1.md", "1 @./l2.md")
            .file("l2.md", "2 @./l3.md")
            .file("l3.md", "3 @./l4.md")
            .file("l4.md", "4 @./l5.md")
            .file("l5.md", "5 @./l6.md")
            .file("l6.md", "6 @./l7.md")
            .file("l7.md", "7"),
        case("depth_limit_two", "@./l1.md")
            .depth(2)
            .file("l1.md", "1 @./l2.md")
            .file("l2.md", "2 @./l3.md")
            .file("l3.md", "3"),
        case("depth_zero", "@./l1.md").depth(0).file("l1.md", "1"),
        case("inline_code_span", "Use `@./a.md` here, and @./a.md").file("a.md", "A"),
        case("double_backtick_span", "`` code @./a.md `` @./a.md").file("a.md", "A"),
        case("fenced_backticks", "```\n@./a.md\n```\n@./b.md")
            .file("a.md", "A")
            .file("b.md", "B"),
        case("fenced_backticks_with_info", "```markdown\n# x\n@./a.md\n```\ntext @./a.md")
            .file("a.md", "A"),
        case("unclosed_backtick_fence", "```\n@./a.md\n").file("a.md", "A"),
        case("code_span_in_imported_file", "@./a.md")
            .file("a.md", "A `@./b.md` @./b.md")
            .file("b.md", "B"),
        case("fenced_tildes", "~~~\n@./a.md\n~~~\n@./b.md")
            .file("a.md", "A")
            .file("b.md", "B")
            .differs(
                TILDE_WHY,
                "~~~\n@./a.md\n~~~\n<!-- Imported from: ./b.md -->\nB\n<!-- End of import from: ./b.md -->",
                r#"{"path":"unknown","imports":[{"path":"{ROOT}/b.md"}]}"#,
            ),
        case("fenced_tildes_long_fence", "~~~~ md\n~~~\n@./a.md\n~~~~\n@./a.md")
            .file("a.md", "A")
            .differs(
                TILDE_WHY,
                "~~~~ md\n~~~\n@./a.md\n~~~~\n<!-- Imported from: ./a.md -->\nA\n<!-- End of import from: ./a.md -->",
                r#"{"path":"unknown","imports":[{"path":"{ROOT}/a.md"}]}"#,
            ),
        case("missing_file", "before @./nope.md after"),
        case("missing_directory", "@./nodir/x.md"),
        case("outside_root_relative", "@../secret.md")
            .dir("proj/.git")
            .base("proj")
            .file("secret.md", "SECRET"),
        case("outside_root_absolute", "@/etc/hostname and @/etc/passwd"),
        case("outside_without_git_uses_base_dir", "@../up.md")
            .dir("sub")
            .base("sub")
            .file("up.md", "UP"),
        case("explicit_project_root_allows_parent", "@../up.md")
            .dir("sub")
            .base("sub")
            .root("")
            .file("up.md", "UP"),
        case("nested_import_escaping_root", "@./a.md")
            .dir("proj/.git")
            .base("proj")
            .file("proj/a.md", "A @../../x.md")
            .file("x.md", "X"),
        case("symlink_pointing_outside_root", "@./link.md")
            .dir("proj/.git")
            .base("proj")
            .file("outside/o.md", "OUT")
            .link("proj/link.md", "{ROOT}/outside/o.md"),
        case("symlink_inside_root", "@./link.md")
            .file("real.md", "REAL")
            .link("link.md", "real.md"),
        case("percent_encoded_traversal", "@./%2e%2e/secret.md")
            .dir("proj/.git")
            .base("proj")
            .file("secret.md", "SECRET"),
        case("percent_encoded_space", "@./my%20file.md").file("my file.md", "spaced"),
        case("email_and_mid_word", "mail me@example.com or foo@./a.md or (@./a.md)").file("a.md", "A"),
        case("handle_like_word", "ask @alice about it"),
        case("dots_and_dashes", "@./my-file.v2.md @./.hidden.md @./sub.dir/x_y-z.md")
            .file("my-file.v2.md", "dashed")
            .file(".hidden.md", "hidden")
            .file("sub.dir/x_y-z.md", "xyz"),
        case("url_like", "see @http://example.com/a.md and @https://x.y and @file:///etc/passwd"),
        case("windows_like", "@C:\\Users\\me\\a.md and @.\\a.md").file("a.md", "A"),
        case("trailing_punctuation", "@./a.md. @./a.md, (@./a.md) @./a.md:").file("a.md", "A"),
        case("multiple_on_one_line", "@./a.md @./b.md\t@./c.md").file("a.md", "A").file("b.md", "B").file("c.md", "C"),
        case("non_markdown_file", "@./config.json\n@./script.sh")
            .file("config.json", "{\"k\": 1}\n")
            .file("script.sh", "#!/bin/sh\necho hi\n"),
        case("empty_file", "[@./empty.md]\n@./empty.md").file("empty.md", ""),
        case("unicode", "Ünïcödé @./ünï.md 🎉 @./日本.md").file("ünï.md", "héllo 世界 🎉").file("日本.md", "こんにちは"),
        case("not_imports", "@ alone, @@x, @1.md, @_x, @-y and a trailing @"),
        case("directory_import", "@./sub").dir("sub"),
        case("path_through_a_file", "@./a.md/x.md").file("a.md", "A"),
        case("crlf_lines", "one\r\n@./a.md\r\ntwo").file("a.md", "A\r\n"),
        case("tab_and_start_of_text", "@./a.md\t@./b.md").file("a.md", "A").file("b.md", "B"),
        case("utf8_bom_file", "@./bom.md").file("bom.md", "\u{feff}BOM text"),
        case("invalid_utf8_file", "@./bin.md").bytes("bin.md", b"A\xffB\xc3(C"),
        case("flat_basic", "Root @./a.md @./b.md")
            .flat()
            .file("a.md", "A @./c.md")
            .file("b.md", "B")
            .file("c.md", "  C  \n"),
        case("flat_cycle_and_missing", "@./a.md @./gone.md")
            .flat()
            .file("a.md", "A @./b.md")
            .file("b.md", "B @./a.md"),
        case("flat_code_and_outside", "`@./a.md` @../x.md @./b.md")
            .flat()
            .dir("p/.git")
            .base("p")
            .file("p/a.md", "A")
            .file("p/b.md", "B")
            .file("x.md", "X"),
    ]
}
