# The MLC course's stochastic schedule of mm, as a kiln-tune user space:
#   kiln-tune benchmarks/tuning/mm.relax --function mm --space-file benchmarks/tuning/mm_space.py --db DIR
# (compiler/tune/space_text.h lists the statements kiln-tune reads.)
def stochastic_schedule_mm(sch):
    block_C = sch.get_block("C", "mm")
    i, j, k = sch.get_loops(block=block_C)
    i_factors = sch.sample_perfect_tile(loop=i, n=2, max_innermost_factor=16)
    j_factors = sch.sample_perfect_tile(loop=j, n=2, max_innermost_factor=64)
    i_0, i_1 = sch.split(loop=i, factors=i_factors)
    j_0, j_1 = sch.split(loop=j, factors=j_factors)
    sch.reorder(i_0, j_0, i_1, k, j_1)
    sch.vectorize(j_1)
    sch.decompose_reduction(block_C, k)
    return sch
