"""The workbook: write the backward passes of the ops a Transformer is made of, check them, and
train the tiny GPT with them.

    python -m demos.exercises start DIR          # write the exercises (never over your files)
    python -m demos.exercises check DIR [NAME]   # gradient-check them: pass, or the first wrong element and a hint
    python -m demos.exercises gpt DIR            # train the tiny GPT with your passing ops; plot both losses

workbook.py writes and loads the files, answers/ holds the reference answers, catalogue.py
the checks and the typical mistakes, check.py the checker, substitute.py swaps your ops
into the engine, gpt.py trains.
"""
