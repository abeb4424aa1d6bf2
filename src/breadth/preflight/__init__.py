"""Before any compute: what a run will compute and what it costs (`costs`), whether its rows fit
the model's token limits (`sequence_fit`), and every check of a config against this machine
(`checks`).
"""
