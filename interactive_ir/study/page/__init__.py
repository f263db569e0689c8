"""The study's web page: `logic` (what the page shows and does, without Gradio), `render` (its HTML),
`layout` (the Gradio components and events), `admin` (the admin page). `interactive_ir.study.ui` builds it."""
