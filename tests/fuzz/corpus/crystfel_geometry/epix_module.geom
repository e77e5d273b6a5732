; ePix10ka2M-like excerpt: one module of four ASICs (written for livedrp's tests)
clen = /LCLS/detector_1/EncoderValue mm
photon_energy = /LCLS/photon_energy_eV eV
adu_per_eV = 0.0001
res = 10000
coffset = 0.0
data = /entry_1/data_1/data
dim0 = %
dim1 = ss
dim2 = fs
mask = /entry_1/data_1/mask
mask_good = 0x0000
mask_bad = 0xffff
flag_morethan = 60000

rigid_group_m0 = m0a0,m0a1,m0a2,m0a3
rigid_group_collection_asics = m0

m0a0/min_fs = 0
m0a0/max_fs = 191
m0a0/min_ss = 0
m0a0/max_ss = 175
m0a0/fs = +0.999962x +0.008727y
m0a0/ss = +0.008727x -0.999962y
m0a0/corner_x = -386.5
m0a0/corner_y = 370.25
m0a0/max_adu = 30000

m0a1/min_fs = 192
m0a1/max_fs = 383
m0a1/min_ss = 0
m0a1/max_ss = 175
m0a1/fs = +0.999962x +0.008727y
m0a1/ss = +0.008727x -0.999962y
m0a1/corner_x = -192.3
m0a1/corner_y = 372.0
m0a1/no_index = 1

m0a2/min_fs = 0
m0a2/max_fs = 191
m0a2/min_ss = 176
m0a2/max_ss = 351
m0a2/fs = +0.999962x +0.008727y
m0a2/ss = +0.008727x -0.999962y
m0a2/corner_x = -385.0
m0a2/corner_y = 192.1

m0a3/min_fs = 192
m0a3/max_fs = 383
m0a3/min_ss = 176
m0a3/max_ss = 351
m0a3/fs = +0.999962x +0.008727y +0.001z
m0a3/ss = +0.008727x -0.999962y
m0a3/corner_x = -190.8
m0a3/corner_y = 193.8
m0a3/mask_edge_pixels = 1

bad_a0_column/min_fs = 10
bad_a0_column/max_fs = 10
bad_a0_column/min_ss = 0
bad_a0_column/max_ss = 175
bad_a0_column/panel = m0a0

bad_spot/min_x = -250
bad_spot/max_x = -240
bad_spot/min_y = 300
bad_spot/max_y = 310
