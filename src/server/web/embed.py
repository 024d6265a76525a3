#!/usr/bin/env python3
"""embed.py OUTPUT.c FILE... -- turns the dashboard's files into a C table.

Writes al__web_files[] (name, content type, bytes, length) and
al__nweb_files, which api_web.c serves; the build runs it (meson's
custom_target in src/server/meson.build) whenever a file changes, so the
files are part of allot-daemon and nothing is read from disk at run time.
"""
import os
import sys

TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
}


def main():
    out, inputs = sys.argv[1], sys.argv[2:]
    lines = [
        "/*",
        " * web_files.c -- made by src/server/web/embed.py from the files in",
        " * src/server/web/ (do not edit): the dashboard's files, which",
        " * api_web.c serves.  Data only; calls nothing.",
        " */",
        "#include \"api_int.h\"",
        "",
    ]
    table = []
    for i, path in enumerate(sorted(inputs, key=os.path.basename)):
        name = os.path.basename(path)
        ext = os.path.splitext(name)[1]
        if ext not in TYPES:
            sys.exit(f"embed.py: no content type for {name}")
        with open(path, "rb") as f:
            data = f.read()
        lines.append(f"static const unsigned char f{i}[] = {{")
        for k in range(0, len(data), 16):
            lines.append("    " + ", ".join(str(b) for b in data[k:k + 16])
                         + ",")
        lines.append("    0,\n};")
        table.append(f'    {{ "{name}", "{TYPES[ext]}", f{i}, {len(data)} }},')
    lines.append("const al__web_file_t al__web_files[] = {")
    lines += table
    lines.append("};")
    lines.append(f"const int al__nweb_files = {len(table)};")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
