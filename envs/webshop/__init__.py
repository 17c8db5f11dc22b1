"""WebShop: a faithful, scalable re-build of princeton-nlp's WebShop as a Gymnasium env.

Modules, one job each: `vocab`/`synth` (seeded synthetic catalog and goals), `loader` (original
WebShop files), `search` (BM25 index cached on disk), `shop` (pages and transitions),
`actions` (parsing bad input), `render` (text / text_rich / html), `reward` (WebShop's formula),
`nouns` (model-free noun tagger for the type reward), `expert` (scripted policy),
`resources` (process-wide sharing), `env` (the gym env), `web` (the page for people).
"""
